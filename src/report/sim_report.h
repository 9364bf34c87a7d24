// A simulated step as people and programs read it: a text table of the step
// time and each device's compute, copies and memory, or one JSON object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/simulator.h"

namespace devplace {

std::string FormatSimResultText(const Cluster& cluster, const SimResult& result);
nlohmann::json SimResultToJson(const Cluster& cluster, const SimResult& result);

// "1.23 GiB", "512 MiB", ...
std::string FormatBytes(int64_t bytes);

}  // namespace devplace
