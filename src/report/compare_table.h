// The comparison of placement methods on one graph and cluster (Table 2 of
// the 2017 paper): as a text table and as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/lower_bound.h"
#include "sim/simulator.h"

namespace devplace {

struct MethodResult {
  std::string method;
  Placement placement;
  SimResult sim;
  double placer_seconds = 0;
  std::string note;  // what the placer could not honour, or why it failed
};

// A placer that refused the problem (threw Error: a graph beyond what it
// can handle, a library that failed), and why, in one line.
struct RefusedMethod {
  std::string method;
  std::string reason;
  double placer_seconds = 0;
};

struct Comparison {
  std::string graph_name;
  std::string cluster_name;
  int32_t num_ops = 0;
  LowerBound bound;
  std::vector<MethodResult> methods;
  std::vector<RefusedMethod> refused;  // shown after `methods`, with their reasons

  // The single-GPU step time, if that method ran and fit; 0 otherwise.
  double single_gpu_us() const;
};

std::string FormatComparisonText(const Cluster& cluster, const Comparison& comparison);
nlohmann::json ComparisonToJson(const Cluster& cluster, const Comparison& comparison);

}  // namespace devplace
