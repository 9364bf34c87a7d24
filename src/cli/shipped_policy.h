// The pre-trained policies that come with devplace (policies/ in the
// source tree): `place --method gdp` with no --policy and no budget places
// zero-shot with one of them.
#pragma once

#include <optional>
#include <string>

namespace devplace {

// GDP with the device-scoring head, trained across generated clusters
// (BENCHMARKS.md, "One policy for any cluster", has its command and log).
inline constexpr const char* kShippedGdpPolicy = "gdp_any_cluster.pt";

// The path of the shipped policy file `name`, or nothing when neither place
// holds it: share/devplace/policies beside this program's folder (an
// install), then the source tree this program was built from.
std::optional<std::string> FindShippedPolicy(const std::string& name);

}  // namespace devplace
