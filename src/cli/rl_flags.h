// Flags that `place` and `train` share for the learned placers.
#pragma once

#include <string>

#include "rl/rl_placer.h"

namespace CLI {
class App;
}

namespace devplace {

// GDP's network sizes, ablations and start bonus (RlOptions::gdp_*).
void AddGdpNetworkFlags(CLI::App* command, RlOptions& rl, const std::string& group);

// A one-line Error where a network size or ablation flag is given beside
// --policy, whose file fixes the architecture (the flag would do nothing).
void RefuseNetworkFlagsWithPolicy(const CLI::App& command, const RlOptions& rl);

// Mars's network sizes, encoder file and encoder learning rate (RlOptions::mars_*).
void AddMarsFlags(CLI::App* command, RlOptions& rl, const std::string& group);

}  // namespace devplace
