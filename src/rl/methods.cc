// The registry of learned placers: a method's name and the policy it trains.
// A new method is a policy file and a line here.
#include "rl/methods.h"

#include "rl/gdp_policy.h"
#include "rl/hdp_policy.h"
#include "rl/mars_policy.h"
#include "rl/seq2seq_placer.h"
#include "util/error.h"

namespace devplace {
namespace {

struct LearnedMethod {
  const char* name;
  std::unique_ptr<Policy> (*make)(const PlacementProblem&, const RlOptions&);
  const char* failing_signal;  // RlOptions::failing_signal when not given
  const char* algorithm;       // what `place` trains it with when --algorithm is not given
};

// The 2017 placer keeps its paper's flat failing signal (and its pinned
// curve); HDP grades failures by how far they overflow memory (docs/rl.md).
// GDP trains with PPO, as its paper does: on NMT k80x4 (2,000 samples) it
// reached 0.601 s with PPO and 0.734 s with REINFORCE (docs/rl.md).
const LearnedMethod kMethods[] = {
    {"rl", MakeSeq2SeqPlacer, "flat", "reinforce"},
    {"hdp", MakeHdpPolicy, "graded", "reinforce"},
    {"gdp", MakeGdpPolicy, "graded", "ppo"},
    // Mars trains with PPO, as its paper does.
    {"mars", MakeMarsPolicy, "graded", "ppo"},
};

}  // namespace

const std::vector<std::string>& LearnedMethodNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const LearnedMethod& m : kMethods) out.push_back(m.name);
    return out;
  }();
  return names;
}

bool IsLearnedMethod(const std::string& name) {
  for (const LearnedMethod& m : kMethods) {
    if (name == m.name) return true;
  }
  return false;
}

std::string DefaultAlgorithm(const std::string& method) {
  for (const LearnedMethod& m : kMethods) {
    if (method == m.name) return m.algorithm;
  }
  return "reinforce";
}

bool GradesFailures(const RlOptions& options) {
  if (!options.failing_signal.empty()) return options.failing_signal == "graded";
  for (const LearnedMethod& m : kMethods) {
    if (options.method == m.name) return std::string(m.failing_signal) == "graded";
  }
  return false;
}

std::unique_ptr<Policy> MakePolicy(const PlacementProblem& problem, const RlOptions& options) {
  for (const LearnedMethod& m : kMethods) {
    if (options.method == m.name) return m.make(problem, options);
  }
  throw Error("unknown learned method '" + ForMessage(options.method) + "' (rl, hdp, gdp or mars)");
}

}  // namespace devplace
