// Every placing method devplace knows, by name, from one list: the
// baselines and searches (placers/placer.h's ListPlacers) and the learned
// methods (learned/learned_methods.h). Torch-free, so that `devplace`
// lists, checks and describes every method without loading torch; the
// learned methods run only where the torch library has set the learned
// runner (devplace-learn, SetLearnedRunner).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "learned/learned_methods.h"
#include "learned/learned_placer.h"
#include "placers/placer.h"

namespace devplace {

enum class MethodKind {
  kBaseline,  // one shot: a placement from the graph and cluster
  kSearch,    // spends a SearchBudget of simulator evaluations or seconds
  kLearned,   // trains a policy (torch)
  kLearnedSearch,  // a search whose proposals are learned as it runs (torch)
};

struct MethodInfo {
  std::string name;
  std::string description;
  MethodKind kind;
  const PlacerInfo* placer = nullptr;            // baselines and searches
  const LearnedMethodFacts* learned = nullptr;   // learned methods
  const LearnedSearchFacts* learned_search = nullptr;
};

// Every method: the placers in ListPlacers' order, then the learned
// searches, then the learned placers.
const std::vector<MethodInfo>& ListMethods();

// "a, b, c": the names of the methods of `kinds`, in ListMethods' order.
std::string MethodNames(std::initializer_list<MethodKind> kinds);

// The method called `name` among those of `kinds`; throws Error naming it
// and listing those methods.
const MethodInfo& FindMethod(const std::string& name, std::initializer_list<MethodKind> kinds);

// What runs every learned method: the torch library's training loop
// (TrainLearnedPlacer). Unset in the torch-free program, where running a
// learned method throws Error.
using LearnedRunner = LearnedResult (*)(const PlacementProblem&, const LearnedOptions&, const LearnedProgressCallback&);
void SetLearnedRunner(LearnedRunner runner);
LearnedRunner GetLearnedRunner();

// What runs the learned searches (guided), set alike by devplace-learn.
using LearnedSearchRunner = PlacerOutput (*)(const PlacementProblem&, const std::string& method, const LearnedOptions&);
void SetLearnedSearchRunner(LearnedSearchRunner runner);
LearnedSearchRunner GetLearnedSearchRunner();

}  // namespace devplace
