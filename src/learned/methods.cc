// The policy each learned method trains (its name and defaults are in the
// torch-free learned/learned_methods.cc).
#include "learned/methods.h"

#include "learned/learned_methods.h"
#include "learned/policies/gdp_policy.h"
#include "learned/policies/hdp_policy.h"
#include "learned/policies/mars_policy.h"
#include "learned/policies/seq2seq_policy.h"
#include "util/error.h"

namespace devplace {
namespace {

// The policy each learned method trains; its other facts are in
// learned/learned_methods.cc.
struct PolicyMaker {
  const char* method;
  std::unique_ptr<Policy> (*make)(const PlacementProblem&, const LearnedOptions&);
};

const PolicyMaker kPolicyMakers[] = {
    {"rl", MakeSeq2SeqPolicy},
    {"hdp", MakeHdpPolicy},
    {"gdp", MakeGdpPolicy},
    {"mars", MakeMarsPolicy},
};

}  // namespace

bool GradesFailures(const LearnedOptions& options) {
  if (!options.failing_signal.empty()) return options.failing_signal == "graded";
  const LearnedMethodFacts* m = FindLearnedMethod(options.method);
  return m && std::string(m->failing_signal) == "graded";
}

std::unique_ptr<Policy> MakePolicy(const PlacementProblem& problem, const LearnedOptions& options) {
  for (const PolicyMaker& m : kPolicyMakers) {
    if (options.method == m.method) return m.make(problem, options);
  }
  throw Error("unknown learned method '" + ForMessage(options.method) + "' (rl, hdp, gdp or mars)");
}

}  // namespace devplace
