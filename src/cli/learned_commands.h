// The commands that need libtorch (the learned placers and the executor),
// and the hand-over to the program that has them. devplace links no torch,
// so that the commands that do not learn start without loading it; it lists
// these commands in --help and, when one is asked for, replaces itself
// (execv, same pid, same arguments) with devplace-learn from its own
// folder: the same program with these commands added.
#pragma once

#include <string>
#include <vector>

namespace devplace {

inline constexpr const char* kLearnedProgram = "devplace-learn";

struct LearnedCommand {
  const char* name;
  const char* description;  // --help's line, the same in both programs
};

// Every whole command that needs torch, in --help's order. The one other
// part that needs it is `clusters --detect` (devplace_app.h).
const std::vector<LearnedCommand>& LearnedCommands();

// The description of LearnedCommands()' entry `name`, for the function that
// registers the command in devplace-learn.
const char* LearnedCommandDescription(const std::string& name);

// Replaces this process with devplace-learn from this program's folder, run
// with `argv`. Returns only by throwing Error (the program is missing or
// cannot run), which names it and `command`, what needed it.
void ExecLearnedProgram(const std::string& command, char** argv);

}  // namespace devplace
