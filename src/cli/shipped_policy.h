// The pre-trained policies that come with devplace (policies/ in the
// source tree): `place --method gdp` with no --policy and no budget places
// zero-shot with one of them, and guided's screen starts from one.
#pragma once

#include <optional>
#include <string>

#include "learned/search/guided_search.h"

namespace devplace {

// GDP with the device-scoring head, trained across generated clusters
// (BENCHMARKS.md, "One policy for any cluster", has its command and log).
inline constexpr const char* kShippedGdpPolicy = "gdp_any_cluster.pt";

// guided's screen fitted on generated graphs and clusters (BENCHMARKS.md,
// "A screen fitted on other graphs" has its command): guided's default start.
inline constexpr const char* kShippedGuidedScreen = "guided_screen.pt";

// The path of the shipped policy file `name`, or nothing when neither place
// holds it: share/devplace/policies beside this program's folder (an
// install), then the source tree this program was built from.
std::optional<std::string> FindShippedPolicy(const std::string& name);

// The screen guided starts from when none is named: the shipped one, where
// this build has it and it fits the search (the regression screen, of the
// default width), else none (""): a flag that reshapes the screen starts a
// fresh one rather than failing.
std::string DefaultGuidedScreen(const GuidedSearchOptions& guided);

}  // namespace devplace
