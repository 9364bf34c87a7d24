// The subcommands of the devplace program. Each Add* registers one on the
// app, with its flags and the function that runs it.
#pragma once

#include <CLI/CLI.hpp>

namespace devplace {

void AddSimulateCommand(CLI::App& app);
void AddCompareCommand(CLI::App& app);
void AddPlaceCommand(CLI::App& app);
void AddTrainCommand(CLI::App& app);  // GDP across graphs
void AddPretrainCommand(CLI::App& app);  // Mars's encoder
void AddGenerateCommand(CLI::App& app);
void AddImportCommand(CLI::App& app);  // ONNX models
void AddInfoCommands(CLI::App& app);  // clusters, models, info
void AddExportCommand(CLI::App& app);  // placement files in other formats
void AddReportCommand(CLI::App& app);  // the HTML report
void AddRunCommand(CLI::App& app);     // a step on this machine's devices (the executor)
void AddProfileCommand(CLI::App& app);  // op times measured on this machine (the executor)
// `clusters --detect`: measures this machine with the executor, which the
// torch-free commands do not link; call after AddInfoCommands.
void AddClustersDetect(CLI::App& app);

// What `clusters` does without --detect: list the presets, or print one.
void RunClusters(const std::string& show);

}  // namespace devplace
