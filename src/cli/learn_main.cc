// devplace-learn: devplace with the commands that need torch (the learned
// placers, the executor). devplace runs it in its own place when one of
// them is asked for; it runs every other command the same way devplace does.
#include <string>

#include "cli/commands.h"
#include "cli/compare_across_ranks.h"
#include "cli/devplace_app.h"
#include "learned/learned_placer.h"
#include "learned/learned_search.h"
#include "methods/method_registry.h"
#include "util/error.h"

int main(int argc, char** argv) {
  // The learned methods are in the one registry in both programs; only
  // here, with the torch library linked, do they run.
  devplace::SetLearnedRunner(devplace::TrainLearnedPlacer);
  devplace::SetLearnedSearchRunner(devplace::RunLearnedSearch);
  devplace::LearnedParts learned;
  learned.add_command = [](CLI::App& app, const std::string& name) {
    if (name == "place") return devplace::AddPlaceCommand(app);
    if (name == "train") return devplace::AddTrainCommand(app);
    if (name == "pretrain") return devplace::AddPretrainCommand(app);
    if (name == "run") return devplace::AddRunCommand(app);
    if (name == "profile") return devplace::AddProfileCommand(app);
    throw devplace::Error("internal: devplace-learn has no command " + name);
  };
  learned.detect = devplace::RunDetect;
  learned.compare_across_ranks = devplace::CompareAcrossRanksOfWorld;
  return devplace::RunDevplace(argc, argv, &learned);
}
