// Flags that `place` and `train` share for the learned placers.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "learned/learned_placer.h"

namespace CLI {
class App;
class Option;
}

namespace devplace {

// GDP's network sizes, ablations and start bonus (LearnedOptions::gdp_*).
// Returns the options a policy file fixes (sizes and ablations), marked
// where they are registered so that one added later is refused beside
// --policy too.
std::vector<const CLI::Option*> AddGdpNetworkFlags(CLI::App* command, LearnedOptions& learned, const std::string& group);

// Mars's network sizes, encoder file and encoder learning rate
// (LearnedOptions::mars_*). Returns the options a policy file fixes.
std::vector<const CLI::Option*> AddMarsFlags(CLI::App* command, LearnedOptions& learned, const std::string& group);

// A one-line Error where one of `fixed_by_policy` is given beside --policy,
// whose file fixes the architecture (the flag would do nothing).
void RefuseFlagsFixedByPolicy(std::span<const CLI::Option* const> fixed_by_policy, const LearnedOptions& learned);

}  // namespace devplace
