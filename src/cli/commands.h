// The subcommands of the devplace program. Each Add* registers one on the
// app, with its flags and the function that runs it. Those that need torch
// (place, train, pretrain, run, profile; learned_commands.h) are registered
// in devplace-learn only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace devplace {

void AddSimulateCommand(CLI::App& app);
void AddCompareCommand(CLI::App& app);
void AddPlaceCommand(CLI::App& app);
void AddTrainCommand(CLI::App& app);  // GDP across graphs
void AddPretrainCommand(CLI::App& app);  // Mars's encoder
void AddGenerateCommand(CLI::App& app);
void AddImportCommand(CLI::App& app);  // ONNX models
// `clusters --detect`'s flags (measuring this machine needs the executor).
struct DetectFlags {
  std::string show;  // without --detect: what `clusters --show` prints
  bool detect = false;
  std::string out;
  int32_t cpu_devices = 1;
  bool no_gpus = false;
};
// clusters, models, info; `clusters --detect` calls `detect` (RunDetect in
// devplace-learn, the hand-over to it in devplace).
void AddInfoCommands(CLI::App& app, std::function<void(const DetectFlags&)> detect);
void AddExportCommand(CLI::App& app);  // placement files in other formats
void AddReportCommand(CLI::App& app);  // the HTML report
void AddRunCommand(CLI::App& app);     // a step on this machine's devices (the executor)
void AddProfileCommand(CLI::App& app);  // op times measured on this machine (the executor)
// What `clusters --detect` does in devplace-learn: measures this machine
// (detect_command.cc).
void RunDetect(const DetectFlags& flags);

}  // namespace devplace
