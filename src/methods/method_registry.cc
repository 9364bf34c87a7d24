#include "methods/method_registry.h"

#include <algorithm>

#include "util/error.h"

namespace devplace {
namespace {

LearnedRunner learned_runner = nullptr;
LearnedSearchRunner learned_search_runner = nullptr;

bool OfKind(const MethodInfo& method, std::initializer_list<MethodKind> kinds) {
  return std::find(kinds.begin(), kinds.end(), method.kind) != kinds.end();
}

}  // namespace

const std::vector<MethodInfo>& ListMethods() {
  static const std::vector<MethodInfo> methods = [] {
    std::vector<MethodInfo> out;
    for (const PlacerInfo& p : ListPlacers()) {
      out.push_back({p.name, p.description, p.search ? MethodKind::kSearch : MethodKind::kBaseline, &p, nullptr});
    }
    for (const LearnedSearchFacts& s : LearnedSearchList()) {
      out.push_back({s.name, s.description, MethodKind::kLearnedSearch, nullptr, nullptr, &s});
    }
    for (const LearnedMethodFacts& m : LearnedMethodList()) {
      out.push_back({m.name, m.description, MethodKind::kLearned, nullptr, &m});
    }
    return out;
  }();
  return methods;
}

std::string MethodNames(std::initializer_list<MethodKind> kinds) {
  std::string names;
  for (const MethodInfo& m : ListMethods()) {
    if (OfKind(m, kinds)) names += (names.empty() ? "" : ", ") + m.name;
  }
  return names;
}

const MethodInfo& FindMethod(const std::string& name, std::initializer_list<MethodKind> kinds) {
  for (const MethodInfo& m : ListMethods()) {
    if (m.name == name && OfKind(m, kinds)) return m;
  }
  throw Error("unknown method '" + name + "' (known methods: " + MethodNames(kinds) + ")");
}

void SetLearnedRunner(LearnedRunner runner) { learned_runner = runner; }

LearnedRunner GetLearnedRunner() { return learned_runner; }

void SetLearnedSearchRunner(LearnedSearchRunner runner) { learned_search_runner = runner; }

LearnedSearchRunner GetLearnedSearchRunner() { return learned_search_runner; }

}  // namespace devplace
