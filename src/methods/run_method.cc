#include "methods/run_method.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>

#include "learned/files/run_folder.h"
#include "learned/learned_methods.h"
#include "placers/methods.h"
#include "util/error.h"
#include "util/stop_request.h"

namespace devplace {
namespace {

// The learned run's options: its share of the budget. Sets `search_after`
// to the search that spends the rest ("mcmc": the finishing search;
// "guided": after a zero-shot placement), or leaves it empty.
LearnedOptions LearnedShare(const LearnedOptions& options, std::string& search_after) {
  LearnedOptions learned = options;
  const bool budget = options.max_samples > 0 || options.max_seconds > 0;
  if (options.zero_shot && budget) {
    // The policy places with no update; the whole budget is the search's.
    search_after = "guided";
    learned.max_samples = 0;
    learned.max_seconds = 0;
    learned.max_steps = 0;
  } else if (!options.zero_shot && budget && options.finishing_share > 0) {
    search_after = "mcmc";
    const double share = options.finishing_share;
    if (options.max_samples > 0) {
      learned.max_samples = std::max<int64_t>(1, options.max_samples - std::llround(share * static_cast<double>(options.max_samples)));
    }
    if (options.max_seconds > 0) learned.max_seconds = options.max_seconds * (1 - share);
    // Out of memory half way, the learned run is far from fitting: a chain
    // of mcmc's with its exchanges fits the packing puzzle in 300
    // evaluations on 10 of 10 seeds, 200 on 5 of 10, where the learned runs
    // had not in 800.
    learned.unfitted_share = 0.5;
  }
  return learned;
}

// The search after the learned run, from `start` (named `start_name`), on
// what is left of the budget. Returns nothing when nothing is left or a stop
// came.
std::optional<PlacerOutput> SearchAfterLearned(const PlacementProblem& problem, const LearnedOptions& options,
                                               const std::string& search, const LearnedResult& learned,
                                               const Placement& start, const std::string& start_name,
                                               const MethodProgress& progress) {
  if (StopRequested()) return std::nullopt;
  PlacementProblem searched = problem;
  searched.budget = {};
  if (options.max_samples > 0) {
    searched.budget.max_evaluations = options.max_samples - learned.samples;
    if (searched.budget.max_evaluations <= 0) return std::nullopt;
  }
  if (options.max_seconds > 0) {
    searched.budget.max_seconds = options.max_seconds - learned.seconds;
    if (searched.budget.max_seconds <= 0) return std::nullopt;
  }
  searched.progress = progress.search;
  try {
    if (search == "mcmc") return start.empty() ? PlaceMcmc(searched) : PlaceMcmcFrom(searched, start, start_name);
    const LearnedSearchRunner run = GetLearnedSearchRunner();
    if (!run) return std::nullopt;
    LearnedOptions guided = options;
    guided.search_start = {start, start_name};
    guided.learning_rate = FindLearnedSearch(search)->learning_rate;
    // The learned run's folder holds its own checkpoint and curve.
    guided.out_dir.clear();
    guided.resume = false;
    return run(searched, search, guided);
  } catch (const Stopped&) {
    return std::nullopt;
  }
}

MethodOutput RunLearned(const PlacementProblem& problem, const MethodInfo& method, const LearnedOptions& options,
                        const MethodProgress& progress) {
  const LearnedRunner run = GetLearnedRunner();
  if (!run) {
    throw Error(method.name + " is a learned method: it runs in devplace-learn, the program built with libtorch");
  }
  std::string search;
  LearnedResult result = run(problem, LearnedShare(options, search), progress.learned);
  MethodOutput output;
  output.samples = result.samples;
  output.seconds = result.seconds;
  output.best_step_time_s = result.best_step_time_s;
  output.controller_samples = result.controller_samples;
  const bool fits = !result.best_placement.empty();
  if (!search.empty()) {
    const Placement& start = fits ? result.best_placement : result.closest_placement;
    const std::string start_name = search == "guided"   ? "the policy's zero-shot placement"
                                   : fits               ? "the learned run's best"
                                                        : "the learned run's placement nearest to fitting";
    if (std::optional<PlacerOutput> placed =
            SearchAfterLearned(problem, options, search, result, start, start_name, progress)) {
      output.search_after = search;
      output.search_samples = placed->evaluations;
      output.samples += placed->evaluations;
      output.seconds += placed->seconds;
      // The chain keeps its start unless it finds a strictly better one.
      output.from_search = !fits || placed->placement != result.best_placement;
      output.note = search + " from " + start_name + " (" + std::to_string(placed->evaluations) + " of the " +
                    std::to_string(output.samples) + " samples): " +
                    (output.from_search ? "the placement is its find" : "found nothing faster; the placement is the learned run's") +
                    "; " + placed->note;
      if (output.from_search) {
        output.placement = std::move(placed->placement);
        output.result = std::move(placed->result);
        output.best_step_time_s = placed->best_step_time_s;
        if (!output.placement.empty() && !options.out_dir.empty()) {
          std::filesystem::create_directories(options.out_dir);
          SavePlacementFile((std::filesystem::path(options.out_dir) / run_folder::kBestPlacement).string(), problem.graph,
                            problem.cluster, output.placement);
        }
        return output;
      }
    }
  }
  output.placement = std::move(result.best_placement);
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
  // A budget of samples or seconds alone is the guided search's after the
  // zero-shot placement, unless asked to fine-tune.
  const bool search_budget = options.max_steps <= 0 && !no_budget && !options.fine_tune;
  if (!options.policy_file.empty() && (no_budget || search_budget || (given.max_steps && options.max_steps == 0))) {
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
