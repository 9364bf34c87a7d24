// One colour per device, the same in every chart of a report, and the
// lighter and darker shades the per-device charts stack phases with.
#pragma once

#include <string>
#include <vector>

#include "cluster/cluster.h"

namespace devplace {

// A distinct "#rrggbb" colour per device of `cluster`, in device order. CPUs
// are greys (the 2017 paper draws the CPU as the colourless device); GPUs
// take a categorical palette, then evenly spaced hues past its end.
std::vector<std::string> DeviceColors(const Cluster& cluster);

// `color` ("#rrggbb") moved toward white (amount > 0) or black (amount < 0)
// by |amount| in [0, 1].
std::string Shade(const std::string& color, double amount);

}  // namespace devplace
