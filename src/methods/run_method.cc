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
