// The registry of learned methods: one line per method. A new method is a
// policy file, a line here and its policy maker in learned/methods.cc.
#include "learned/learned_methods.h"

#include "learned/learned_placer.h"

namespace devplace {

const std::vector<LearnedMethodFacts>& LearnedMethodList() {
  // The 2017 placer keeps its paper's flat failing signal (and its pinned
  // curve); HDP grades failures by how far they overflow memory (docs/rl.md).
  // GDP trains with PPO, as its paper does: on NMT k80x4 (2,000 samples) it
  // reached 0.601 s with PPO and 0.734 s with REINFORCE (docs/rl.md).
  static const std::vector<LearnedMethodFacts> methods = {
      {"rl", "the 2017 paper's seq2seq placer over co-location groups", "flat", "reinforce", 0.0003},
      {"hdp", "HDP: a learned Grouper, then the seq2seq Placer", "graded", "reinforce", 0.0003},
      {"gdp", "GDP: GraphSAGE and a segment-recurrent attention placer", "graded", "ppo", 0.0003},
      // Mars trains with PPO, as its paper does. Its placer learns at 0.003:
      // at 0.0003 it barely leaves its start in 1,000 samples; at 0.003 it
      // reached placements at least as fast on each of five of GDP's settings
      // on two P100s, faster on RNNLM (0.197 -> 0.181 s) and Inception-V3
      // (0.309 -> 0.298 s) (docs/rl.md, "Mars"). Its encoder keeps 0.0003
      // (--mars-encoder-learning-rate), so pre-trained features are not
      // overwritten in the first updates.
      {"mars", "Mars: a pre-trained GCN encoder and a segment-level seq2seq placer", "graded", "ppo", 0.003},
  };
  return methods;
}

const std::vector<LearnedSearchFacts>& LearnedSearchList() {
  static const std::vector<LearnedSearchFacts> searches = {
      {"guided", "mcmc's chain with moves proposed by a scorer learned online from the chain's own improvements", 0.01},
  };
  return searches;
}

const LearnedSearchFacts* FindLearnedSearch(const std::string& name) {
  for (const LearnedSearchFacts& s : LearnedSearchList()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

const LearnedMethodFacts* FindLearnedMethod(const std::string& name) {
  for (const LearnedMethodFacts& m : LearnedMethodList()) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

const std::vector<std::string>& LearnedMethodNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const LearnedMethodFacts& m : LearnedMethodList()) out.push_back(m.name);
    return out;
  }();
  return names;
}

bool IsLearnedMethod(const std::string& name) { return FindLearnedMethod(name) != nullptr; }

std::string DefaultAlgorithm(const std::string& method) {
  const LearnedMethodFacts* m = FindLearnedMethod(method);
  return m ? m->algorithm : "reinforce";
}

double DefaultLearningRate(const std::string& method) {
  const LearnedMethodFacts* m = FindLearnedMethod(method);
  return m ? m->learning_rate : LearnedOptions().learning_rate;
}

}  // namespace devplace
