// The learned methods' torch-free facts: their names, what they are, and
// what `place` trains each with when its flags do not say. The torch-free
// `devplace` knows the learned methods from this table (through the method
// registry, methods/method_registry.h); the policy each one trains is made
// in the torch library (learned/methods.cc).
#pragma once

#include <string>
#include <vector>

namespace devplace {

struct LearnedMethodFacts {
  const char* name;
  const char* description;
  const char* failing_signal;  // LearnedOptions::failing_signal when not given
  const char* algorithm;       // what `place` trains it with when --algorithm is not given
  double learning_rate;        // the placer's Adam rate when --learning-rate is not given
};

// The searches whose proposals are learned (guided): they spend a search's
// budget (evaluations, seconds), keep a checkpoint, and run in the torch
// library.
struct LearnedSearchFacts {
  const char* name;
  const char* description;
  double learning_rate;  // the proposer's Adam rate when --learning-rate is not given
};
const std::vector<LearnedSearchFacts>& LearnedSearchList();
const LearnedSearchFacts* FindLearnedSearch(const std::string& name);

// Every learned method, in the order --help names them.
const std::vector<LearnedMethodFacts>& LearnedMethodList();

// The facts of the learned method `name`, or null if it is none.
const LearnedMethodFacts* FindLearnedMethod(const std::string& name);

}  // namespace devplace
