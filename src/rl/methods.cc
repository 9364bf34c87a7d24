// The registry of learned placers: a method's name and the policy it trains.
// A new method is a policy file and a line here.
#include "rl/methods.h"

#include "rl/hdp_policy.h"
#include "rl/seq2seq_placer.h"
#include "util/error.h"

namespace devplace {
namespace {

struct LearnedMethod {
  const char* name;
  std::unique_ptr<Policy> (*make)(const PlacementProblem&, const RlOptions&);
};

const LearnedMethod kMethods[] = {
    {"rl", MakeSeq2SeqPlacer},
    {"hdp", MakeHdpPolicy},
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

std::unique_ptr<Policy> MakePolicy(const PlacementProblem& problem, const RlOptions& options) {
  for (const LearnedMethod& m : kMethods) {
    if (options.method == m.name) return m.make(problem, options);
  }
  throw Error("unknown learned method '" + ForMessage(options.method) + "' (rl or hdp)");
}

}  // namespace devplace
