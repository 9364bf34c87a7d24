// A simulated step as people and programs read it: a text table of the step
// time and each device's compute, copies and memory, or one JSON object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/measure.h"
#include "sim/simulator.h"

namespace devplace {

std::string FormatSimResultText(const Cluster& cluster, const SimResult& result);
nlohmann::json SimResultToJson(const Cluster& cluster, const SimResult& result);

// What `simulate` prints: one step in detail and, when it ran the measuring
// protocol (`protocol` non-null, --steps `steps` > 1), the protocol's mean
// as THE step time ("step time:", `step_time_s`; none / null if a step of
// it failed). The detailed step's own time is then "one step:",
// `single_step_time_s`; the devices' numbers are that step's.
std::string FormatSimulateText(const Cluster& cluster, const SimResult& step, const Measurement* protocol,
                               int32_t steps);
nlohmann::json SimulateToJson(const Cluster& cluster, const SimResult& step, const Measurement* protocol,
                              int32_t steps);

}  // namespace devplace
