#include "cli/learned_commands.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "util/error.h"

namespace devplace {

const std::vector<LearnedCommand>& LearnedCommands() {
  static const std::vector<LearnedCommand> commands = {
      {"place", "Find a placement: guided search (the default), a learned placer (rl, hdp, gdp, mars), mcmc or a baseline"},
      {"train", "Train one GDP or Mars policy on several graphs for a cluster (batch training)"},
      {"pretrain", "Pre-train Mars's graph encoder on graphs alone (Deep Graph Infomax, no step times)"},
      {"run", "Run training steps of a placement on this machine's devices and report the measured step time"},
      {"profile",
       "Time every op of a graph with its real kernel on this machine and write the op-times table that "
       "simulate/compare/place read with --op-times"},
  };
  return commands;
}

const char* LearnedCommandDescription(const std::string& name) {
  for (const LearnedCommand& command : LearnedCommands()) {
    if (name == command.name) return command.description;
  }
  throw Error("internal: no learned command named " + name);
}

void ExecLearnedProgram(const std::string& command, char** argv) {
  // Next to this program rather than on PATH: the two are built and
  // installed together, and another version on PATH would read these flags
  // differently.
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) {
    throw Error(command + " needs " + kLearnedProgram + " from this program's folder, which /proc/self/exe does not tell: " +
                error.message());
  }
  const std::filesystem::path learned = self.parent_path() / kLearnedProgram;
  // Anything buffered would be lost with this process's image.
  std::fflush(stdout);
  std::fflush(stderr);
  ::execv(learned.c_str(), argv);
  const int exec_error = errno;
  throw Error(command + " needs " + kLearnedProgram + " (the learned placers and the executor, built with libtorch): " +
              ForMessage(learned.string()) + ": " + std::strerror(exec_error));
}

}  // namespace devplace
