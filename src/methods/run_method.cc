#include "methods/run_method.h"

#include <chrono>
#include <filesystem>

#include "learned/files/run_folder.h"
#include "util/error.h"
#include "util/stop_request.h"

namespace devplace {
namespace {

MethodOutput RunLearned(const PlacementProblem& problem, const MethodInfo& method, const LearnedOptions& options,
                        const MethodProgress& progress) {
  const LearnedRunner run = GetLearnedRunner();
  if (!run) {
    throw Error(method.name + " is a learned method: it runs in devplace-learn, the program built with libtorch");
  }
  LearnedResult result = run(problem, options, progress.learned);
  MethodOutput output;
  output.placement = std::move(result.best_placement);
  output.samples = result.samples;
  output.seconds = result.seconds;
  output.best_step_time_s = result.best_step_time_s;
  return output;
}

MethodOutput RunPlacer(const PlacementProblem& given, const MethodInfo& method, const LearnedOptions& options,
                       const MethodProgress& progress) {
  PlacementProblem problem = given;
  // A search (mcmc, exact) spends the budget flags: --max-samples counts
  // simulator evaluations.
  problem.budget.max_evaluations = options.max_samples;
  problem.budget.max_seconds = options.max_seconds;
  problem.progress = progress.search;
  auto start = std::chrono::steady_clock::now();
  PlacerOutput placed;
  try {
    if (method.kind == MethodKind::kLearnedSearch) {
      const LearnedSearchRunner run = GetLearnedSearchRunner();
      if (!run) {
        throw Error(method.name + " learns as it searches: it runs in devplace-learn, the program built with libtorch");
      }
      placed = run(problem, method.name, options);
    } else {
      placed = method.placer->place(problem);
    }
  } catch (const Stopped&) {
    // A one-shot method stopped half way has no placement to keep.
  }
  // Writing a million ops' placement, the final simulation and the
  // results take seconds: the stop's watchdog lets them finish.
  SearchEnded();
  MethodOutput output;
  output.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  output.samples = placed.evaluations;
  if (placed.seconds > 0) output.seconds = placed.seconds;
  output.placement = std::move(placed.placement);
  output.note = std::move(placed.note);
  output.result = std::move(placed.result);
  output.best_step_time_s = placed.measured_step_time_s;
  return output;
}

// A placer's placement, where a learned method's training loop puts its own.
void SavePlacerPlacement(const PlacementProblem& problem, const std::string& out_dir, const Placement& placement) {
  if (placement.empty() || out_dir.empty()) return;
  std::filesystem::create_directories(out_dir);
  SavePlacementFile((std::filesystem::path(out_dir) / run_folder::kBestPlacement).string(), problem.graph,
                    problem.cluster, placement);
}

}  // namespace

void ApplyMethodDefaults(const MethodInfo& method, const MethodOptionsGiven& given, LearnedOptions& options) {
  if (method.kind == MethodKind::kLearned) {
    options.method = method.name;
    if (!given.algorithm) options.algorithm = method.learned->algorithm;
    if (!given.learning_rate) options.learning_rate = method.learned->learning_rate;
    ValidateLearnedOptions(options);
  } else if (method.kind == MethodKind::kLearnedSearch && !given.learning_rate) {
    options.learning_rate = method.learned_search->learning_rate;
  }
}

void ChooseLearnedBudget(const MethodOptionsGiven& given, LearnedOptions& options) {
  const bool no_budget = options.max_steps <= 0 && options.max_seconds <= 0 && options.max_samples <= 0;
  if (!options.policy_file.empty() && (no_budget || (given.max_steps && options.max_steps == 0))) {
    options.zero_shot = true;
    ValidateLearnedOptions(options);
  } else if (no_budget) {
    options.max_seconds = 120;
  }
}

MethodOutput RunMethod(const PlacementProblem& problem, const MethodInfo& method, const LearnedOptions& options,
                       const MethodProgress& progress) {
  MethodOutput output;
  if (method.kind == MethodKind::kLearned) {
    output = RunLearned(problem, method, options, progress);
  } else {
    output = RunPlacer(problem, method, options, progress);
    SavePlacerPlacement(problem, options.out_dir, output.placement);
  }
  SearchEnded();  // a learned search's loop says so itself; here for a search stopped before it began
  return output;
}

}  // namespace devplace
