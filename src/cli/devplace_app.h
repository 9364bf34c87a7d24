// The devplace program's body, shared by its two builds: devplace (no
// torch) and devplace-learn (the same with the commands that need torch;
// learned_commands.h).
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace devplace {

// What devplace-learn adds to the torch-free commands.
struct LearnedParts {
  // Registers the learned command `name`; called once per LearnedCommands().
  std::function<void(CLI::App&, const std::string& name)> add_command;
  std::function<void(const DetectFlags&)> detect;  // clusters --detect
  CompareAcrossRanks compare_across_ranks;          // compare under WORLD_SIZE over 1
};

// Registers every command, parses `argv`, runs the command asked for and
// returns the exit status; every error is one line on stderr. With
// `learned` null (devplace), each learned command is a stand-in that hands
// the whole command line, unparsed, to devplace-learn (ExecLearnedProgram),
// so that its own flags and --help answer, and so does `clusters --detect`.
int RunDevplace(int argc, char** argv, const LearnedParts* learned);

}  // namespace devplace
