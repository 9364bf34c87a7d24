// A simulated step as Chrome trace JSON (viewable in Perfetto or
// chrome://tracing): one process per device with its ops, one per link
// channel with its transfers, and a memory counter per device.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/simulator.h"

namespace devplace {

// `result` must come from a run with record_events.
nlohmann::json ChromeTraceJson(const Graph& graph, const Cluster& cluster, const SimResult& result);
void WriteChromeTrace(const std::string& path, const Graph& graph, const Cluster& cluster, const SimResult& result);

}  // namespace devplace
