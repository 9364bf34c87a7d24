// The subcommands of the devplace program. Each Add* registers one on the
// app, with its flags and the function that runs it. Those that need torch
// (place, train, pretrain, run, profile; learned_commands.h) are registered
// in devplace-learn only.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "placers/placer.h"
#include "report/compare_table.h"

namespace devplace {

void AddSimulateCommand(CLI::App& app);

// What the ranks of a compare across processes must agree on besides the
// graph, cluster and seed (compared by checksum when they join).
struct CompareRankFacts {
  std::string methods;        // the list, as given
  std::string op_times_path;  // "" for none
  std::string budget;
};
// `compare` under WORLD_SIZE over 1 (compare_across_ranks.h, in
// devplace-learn): rank 0's table, or nullopt on a worker, which printed
// nothing.
using CompareAcrossRanks = std::function<std::optional<Comparison>(
    const PlacementProblem& problem, const std::vector<const PlacerInfo*>& placers, const CompareRankFacts& facts,
    bool progress)>;
// `across` runs compare across processes in devplace-learn; devplace has
// none and calls `hand_over` (to devplace-learn) instead.
void AddCompareCommand(CLI::App& app, CompareAcrossRanks across, std::function<void()> hand_over);
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
