#include "learned/policies/unit_decisions.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace devplace {
namespace {

// The stretch probes place runs of 20, 10, 5, 2 and 1 slots per device.
const double kProbeRuns[] = {20, 10, 5, 2, 1};

// The stretch probes cut the network along its locality order, which on
// LSTMs runs across time steps of every layer; no stretch split there beats
// one GPU, while the expert's layer-per-device placement (or a partitioner's
// cut) does, and from a one-GPU start a policy never finds the layer split by
// moving units one at a time (BENCHMARKS.md, GDP-one). A baseline that cannot
// place this graph (a cluster too small for its memory model, say) is simply
// not probed: probes are starting points, not results.
// Every one-shot baseline of `compare` that can beat one GPU is here (the
// one-GPU probe is below), so that the start is at least as fast as the
// best of them.
const char* const kProbedBaselines[] = {"expert", "metis", "mincut", "scotch", "dp_split", "m_topo", "m_etf", "m_sct"};

std::vector<Placement> BaselinePlacements(const PlacementProblem& problem) {
  std::vector<Placement> placements;
  for (const char* name : kProbedBaselines) {
    try {
      placements.push_back(FindPlacer(name).place(problem).placement);
    } catch (const Error&) {
    }
  }
  return placements;
}

std::vector<int32_t> FastDevices(const Cluster& cluster) {
  double fastest = 0;
  for (const Device& d : cluster.devices) fastest = std::max(fastest, d.peak_flops_per_s);
  std::vector<int32_t> fast;
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    if (cluster.devices[d].peak_flops_per_s >= 0.5 * fastest) fast.push_back(d);
  }
  // Fastest first, so that the probes follow the devices, not their order
  // in the cluster: a cluster listed in another order gets the same probes
  // on the same devices (ties keep the cluster's order).
  std::stable_sort(fast.begin(), fast.end(), [&](int32_t a, int32_t b) {
    const Device& x = cluster.devices[a];
    const Device& y = cluster.devices[b];
    if (x.peak_flops_per_s != y.peak_flops_per_s) return x.peak_flops_per_s > y.peak_flops_per_s;
    if (x.memory_bytes != y.memory_bytes) return x.memory_bytes > y.memory_bytes;
    return x.memory_bandwidth_bytes_per_s > y.memory_bandwidth_bytes_per_s;
  });
  return fast;
}

const Graph& Checked(const PlacementProblem& problem) {
  if (problem.graph.num_ops() == 0) throw Error("graph '" + ForMessage(problem.graph.name) + "' has no ops to place");
  if (problem.cluster.num_devices() == 0) throw Error("cluster '" + ForMessage(problem.cluster.name) + "' has no devices");
  return problem.graph;
}

}  // namespace

UnitDecisions::UnitDecisions(const PlacementProblem& problem, bool probe_baselines)
    : features_(BuildOpFeatures(Checked(problem), problem.cluster)),
      devices_(problem.cluster.num_devices()),
      fast_devices_(FastDevices(problem.cluster)) {
  allowed_.resize(static_cast<size_t>(features_.num_units) * devices_);
  for (int32_t u = 0; u < features_.num_units; ++u) {
    for (int32_t d = 0; d < devices_; ++d) {
      allowed_[static_cast<size_t>(u) * devices_ + d] = (features_.unit_kinds[u] & MaskOf(problem.cluster.devices[d].kind)) != 0;
    }
  }
  if (probe_baselines) baseline_placements_ = BaselinePlacements(problem);
}

Placement UnitDecisions::ToPlacement(const std::vector<int32_t>& decision) const {
  if (static_cast<int32_t>(decision.size()) != features_.num_units) {
    throw Error("a decision of " + std::to_string(decision.size()) + " units for a graph of " + std::to_string(features_.num_units));
  }
  Placement placement(features_.num_ops);
  for (int32_t op = 0; op < features_.num_ops; ++op) placement[op] = decision[features_.unit_of_op[op]];
  return placement;
}

std::vector<int32_t> UnitDecisions::Imitate(const Placement& placement) const {
  if (static_cast<int32_t>(placement.size()) != features_.num_ops) throw Error("a placement of the wrong size cannot be imitated");
  std::vector<int32_t> decision(features_.num_units);
  std::vector<int32_t> count(devices_);
  for (int32_t u = 0; u < features_.num_units; ++u) {
    std::fill(count.begin(), count.end(), 0);
    for (int32_t i = features_.unit_op_offsets[u]; i < features_.unit_op_offsets[u + 1]; ++i) {
      const int32_t d = placement[features_.unit_ops[i]];
      if (d >= 0 && d < devices_ && Allowed(u, d)) ++count[d];
    }
    int32_t best = -1;
    for (int32_t d = 0; d < devices_; ++d) {
      if (Allowed(u, d) && (best < 0 || count[d] > count[best])) best = d;
    }
    decision[u] = best;
  }
  return decision;
}

int64_t UnitDecisions::StretchOf(int32_t unit, int64_t stretches) const {
  return std::clamp<int64_t>(static_cast<int64_t>(features_.unit_position[unit] * stretches), 0, stretches - 1);
}

std::vector<std::vector<int32_t>> UnitDecisions::StartProbes() const {
  const int32_t U = features_.num_units;
  const int32_t P = num_fast_devices();
  const int32_t slots = kSlotsPerDevice * P;
  std::vector<std::vector<int32_t>> probes;
  if (P > 1) {
    for (double run : kProbeRuns) {
      std::vector<int32_t> d(U);
      for (int32_t u = 0; u < U; ++u) {
        const int32_t slot = static_cast<int32_t>(StretchOf(u, slots));
        d[u] = RunnableOn(u, fast_devices_[static_cast<int32_t>(std::floor(slot / run)) % P]);
      }
      probes.push_back(std::move(d));
    }
  }
  std::vector<int32_t> one(U);
  for (int32_t u = 0; u < U; ++u) one[u] = RunnableOn(u, fast_devices_[0]);
  probes.push_back(std::move(one));
  for (const Placement& placement : baseline_placements_) probes.push_back(Imitate(placement));
  return probes;
}

int32_t UnitDecisions::FastestProbe(const std::vector<double>& step_times_s) {
  int32_t best = -1;
  for (size_t i = 0; i < step_times_s.size(); ++i) {
    if (std::isfinite(step_times_s[i]) && (best < 0 || step_times_s[i] < step_times_s[best])) best = static_cast<int32_t>(i);
  }
  return best;
}

int32_t UnitDecisions::RunnableOn(int32_t unit, int32_t d) const {
  if (Allowed(unit, d)) return d;
  for (int32_t other = 0; other < devices_; ++other) {
    if (Allowed(unit, other)) return other;
  }
  return d;  // unreachable: BuildOpFeatures refuses a unit no device can run
}

}  // namespace devplace
