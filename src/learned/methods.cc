// The registry of learned placers: a method's name and the policy it trains.
// A new method is a policy file and a line here.
#include "learned/methods.h"

#include "learned/policies/gdp_policy.h"
#include "learned/policies/hdp_policy.h"
#include "learned/policies/mars_policy.h"
#include "learned/policies/seq2seq_policy.h"
#include "util/error.h"

namespace devplace {
namespace {

struct LearnedMethod {
  const char* name;
  std::unique_ptr<Policy> (*make)(const PlacementProblem&, const LearnedOptions&);
  const char* failing_signal;  // LearnedOptions::failing_signal when not given
  const char* algorithm;       // what `place` trains it with when --algorithm is not given
  double learning_rate;        // the placer's Adam rate when --learning-rate is not given
};

// The 2017 placer keeps its paper's flat failing signal (and its pinned
// curve); HDP grades failures by how far they overflow memory (docs/rl.md).
// GDP trains with PPO, as its paper does: on NMT k80x4 (2,000 samples) it
// reached 0.601 s with PPO and 0.734 s with REINFORCE (docs/rl.md).
const LearnedMethod kMethods[] = {
    {"rl", MakeSeq2SeqPolicy, "flat", "reinforce", 0.0003},
    {"hdp", MakeHdpPolicy, "graded", "reinforce", 0.0003},
    {"gdp", MakeGdpPolicy, "graded", "ppo", 0.0003},
    // Mars trains with PPO, as its paper does. Its placer learns at 0.003:
    // at 0.0003 it barely leaves its start in 1,000 samples; at 0.003 it
    // reached placements at least as fast on each of five of GDP's settings
    // on two P100s, faster on RNNLM (0.197 -> 0.181 s) and Inception-V3
    // (0.309 -> 0.298 s) (docs/rl.md, "Mars"). Its encoder keeps 0.0003
    // (--mars-encoder-learning-rate), so pre-trained features are not
    // overwritten in the first updates.
    {"mars", MakeMarsPolicy, "graded", "ppo", 0.003},
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

double DefaultLearningRate(const std::string& method) {
  for (const LearnedMethod& m : kMethods) {
    if (method == m.name) return m.learning_rate;
  }
  return LearnedOptions().learning_rate;
}

bool GradesFailures(const LearnedOptions& options) {
  if (!options.failing_signal.empty()) return options.failing_signal == "graded";
  for (const LearnedMethod& m : kMethods) {
    if (options.method == m.name) return std::string(m.failing_signal) == "graded";
  }
  return false;
}

std::unique_ptr<Policy> MakePolicy(const PlacementProblem& problem, const LearnedOptions& options) {
  for (const LearnedMethod& m : kMethods) {
    if (options.method == m.name) return m.make(problem, options);
  }
  throw Error("unknown learned method '" + ForMessage(options.method) + "' (rl, hdp, gdp or mars)");
}

}  // namespace devplace
