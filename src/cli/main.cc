// devplace: learns where each op of a training step should run.
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "util/error.h"

int main(int argc, char** argv) {
  CLI::App app{
      "devplace: decides which device runs each op of a neural network's training step, so that the step is as fast as "
      "possible and no device runs out of memory.\n\nGraphs are devplace graph files (docs/graph-format.md) or built-in "
      "models (devplace models); clusters are presets (devplace clusters) or cluster files (docs/cluster-format.md)."};
  app.name("devplace");
  // At most one; none is reported after parsing, so that an unknown word is
  // named as such rather than as a missing subcommand.
  app.require_subcommand(0, 1);
  app.fallthrough(false);
  devplace::AddSimulateCommand(app);
  devplace::AddCompareCommand(app);
  devplace::AddPlaceCommand(app);
  devplace::AddGenerateCommand(app);
  devplace::AddImportCommand(app);
  devplace::AddInfoCommands(app);
  devplace::AddExportCommand(app);
  devplace::AddReportCommand(app);
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      std::fprintf(stderr, "devplace: error: no subcommand given (see devplace --help)\n");
      return 2;
    }
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, as every devplace error: what is wrong and where to look.
    std::fprintf(stderr, "devplace: error: %s (see devplace --help)\n", e.what());
    return 2;
  } catch (const devplace::Error& e) {
    std::fprintf(stderr, "devplace: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "devplace: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
