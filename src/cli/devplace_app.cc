#include "cli/devplace_app.h"

#include <csignal>
#include <cstdio>
#include <exception>
#include <functional>
#include <filesystem>
#include <new>
#include <string>
#include <system_error>

#include "cli/flag_checks.h"
#include "cli/learned_commands.h"
#include "util/error.h"
#include "util/stop_request.h"

namespace devplace {
namespace {

// The backstop of the one-line rule: readers escape the names they echo, but
// a library's message may carry newlines (torch appends a stack trace) or be
// huge. Keeps the first line, cut to a readable length.
std::string OneLine(const std::string& message) {
  constexpr size_t kMaxBytes = 1000;
  std::string line = message.substr(0, message.find('\n'));
  for (char& c : line) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  if (line.size() > kMaxBytes) line = line.substr(0, kMaxBytes) + "...";
  return line;
}

}  // namespace

int RunDevplace(int argc, char** argv, const LearnedParts* learned) {
  CLI::App app{
      "devplace: decides which device runs each op of a neural network's training step, so that the step is as fast as "
      "possible and no device runs out of memory.\n\nGraphs are devplace graph files (docs/graph-format.md) or built-in "
      "models (devplace models); clusters are presets (devplace clusters) or cluster files (docs/cluster-format.md)."};
  app.name("devplace");
  // At most one; none is reported after parsing, so that an unknown word is
  // named as such rather than as a missing subcommand.
  app.require_subcommand(0, 1);
  app.fallthrough(false);
  AddSimulateCommand(app);
  AddCompareCommand(app, learned ? learned->compare_across_ranks : nullptr,
                    [argv] { ExecLearnedProgram("compare across processes", argv); });
  for (const LearnedCommand& command : LearnedCommands()) {
    if (learned) {
      learned->add_command(app, command.name);
      continue;
    }
    CLI::App* stand_in = app.add_subcommand(command.name, command.description);
    stand_in->set_help_flag();  // `devplace place --help` is answered by devplace-learn, which knows the flags
    stand_in->prefix_command();  // the arguments stay unparsed, for devplace-learn
    stand_in->callback([name = std::string(command.name), argv] { ExecLearnedProgram(name, argv); });
  }
  AddGenerateCommand(app);
  AddImportCommand(app);
  std::function<void(const DetectFlags&)> detect = [argv](const DetectFlags&) { ExecLearnedProgram("clusters --detect", argv); };
  AddInfoCommands(app, learned ? learned->detect : detect);
  AddExportCommand(app);
  AddReportCommand(app);
  AddFlagValueChecks(app);
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      PrintErrorLineOnce("devplace: error: no subcommand given (see devplace --help)\n");
      return 2;
    }
    if (const int signal = StopSignal(); signal != 0) {
      // The command stopped early but wrote what it found; the status
      // still says it was interrupted, as a killed process's would.
      std::fflush(stdout);  // the results first, then this line, in a pipe too
      std::fprintf(stderr, "devplace: stopped early by %s; what was found before it is written above\n",
                   signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "a signal");
      return 128 + signal;
    }
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, as every devplace error: what is wrong and where to look.
    PrintErrorLineOnce("devplace: error: " + OneLine(e.what()) + " (see devplace --help)\n");
    return 2;
  } catch (const Error& e) {
    PrintErrorLineOnce("devplace: error: " + OneLine(e.what()) + "\n");
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave that the system refuses: an --out that is a file,
    // a name longer than the system allows, a folder without permission.
    std::string path = e.path1().empty() ? std::string("a path") : e.path1().string();
    PrintErrorLineOnce("devplace: error: " + ForMessage(path) + ": " + ForMessage(e.code().message()) + "\n");
    return 1;
  } catch (const std::system_error& e) {
    PrintErrorLineOnce("devplace: error: " + OneLine(e.what()) + "\n");
    return 1;
  } catch (const std::bad_alloc&) {
    PrintErrorLineOnce("devplace: error: out of memory (is an input or a size flag far larger than meant?)\n");
    return 1;
  } catch (const std::exception& e) {
    // Anything else is a bug of ours; still one line, however long or
    // multi-line the library's message (torch appends a stack trace).
    PrintErrorLineOnce("devplace: internal error: " + OneLine(e.what()) + "\n");
    return 3;
  }
  return 0;
}

}  // namespace devplace
