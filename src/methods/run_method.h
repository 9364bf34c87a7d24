// Running one method on one problem: the call `devplace place` makes once
// its flags are checked and its inputs read, whatever the method's kind.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "learned/learned_placer.h"
#include "methods/method_registry.h"
#include "placers/placer.h"

namespace devplace {

// What a method found, the same for every kind.
struct MethodOutput {
  Placement placement;  // empty if it found none (or was stopped before it had one)
  std::string note;     // what a placer could not honour; empty when all is well
  int64_t samples = 0;  // learned: sampled placements; searches: simulator evaluations
  double seconds = 0;   // the method's own time
  // Learned, and a search under an environment (--reward measured): the
  // best step time as its environment measured it.
  double best_step_time_s = 0;
  // The simulator's full result for `placement`, when the method already
  // has it (mcmc's best): no need to run it again.
  std::optional<SimResult> result;
  // Learned: the search run after the learned run ("mcmc", the finishing
  // search; "guided", after a zero-shot placement; empty: none), the
  // evaluations it spent (counted in `samples`), and whether `placement`
  // is its find rather than the learned run's own best.
  std::string search_after;
  int64_t search_samples = 0;
  bool from_search = false;
  // Learned, with controllers across processes: the samples each measured
  // (LearnedResult::controller_samples).
  std::vector<int64_t> controller_samples;
};

// Progress lines, each called now and then; either may be empty.
struct MethodProgress {
  LearnedProgressCallback learned;
  std::function<void(const SearchProgress&)> search;
};

// Runs `method` on `problem` and returns what it found. A learned method
// given a budget of samples or seconds keeps `finishing_share` of it for
// mcmc's chain from its best placement (the finishing search: out of
// memory, its placement nearest to fitting, ranked with the one-shot
// baselines); placing zero-shot with such a budget, guided's chain from the
// zero-shot placement spends all that the placing left. Either counts in
// the budget (MethodOutput's search_after, search_samples, from_search). A learned search
// (guided) runs as a search does, reading `options`' guided options, its
// folder (out_dir, resume, checkpoint_seconds) and learning rate. What judges the
// placements: `problem.environment` for a search (empty: the simulator),
// `options.make_environment` for a learned method (empty: the simulated
// environment). A search spends `options.max_samples` evaluations and
// `options.max_seconds`; a learned method reads all of `options` (its
// method, algorithm and learning rate already chosen). The placement goes
// to `options.out_dir`'s best_placement.json when out_dir is set (a learned
// method writes it on each improvement). A stop (util/stop_request.h) ends
// the method early with what it had; SearchEnded() is called before this
// returns. Throws Error when the method refuses the problem, or when
// `method` is learned and no learned runner is set (SetLearnedRunner).
MethodOutput RunMethod(const PlacementProblem& problem, const MethodInfo& method, const LearnedOptions& options,
                       const MethodProgress& progress);

// Which of a method's options the caller gave (a flag or a keyword);
// what was not given takes the method's default.
struct MethodOptionsGiven {
  bool algorithm = false;
  bool learning_rate = false;
  bool max_steps = false;
};

// The defaults `place` gives `method` for the options not given: a learned
// method's name, algorithm and learning rate (then ValidateLearnedOptions),
// a learned search's learning rate. One place for the command line and the
// Python module, so that both run a method alike.
void ApplyMethodDefaults(const MethodInfo& method, const MethodOptionsGiven& given, LearnedOptions& options);

// A learned method's budget when none is given: a trained policy
// (`policy_file`) places zero-shot, and with a budget of samples or seconds
// (no --max-steps) zero-shot then searches with guided from there for the
// rest of it, unless `fine_tune` or a --max-steps budget asks it to
// fine-tune (`max_steps` 0, given, asks for zero-shot explicitly); anything
// else trains for 120 s.
void ChooseLearnedBudget(const MethodOptionsGiven& given, LearnedOptions& options);

}  // namespace devplace
