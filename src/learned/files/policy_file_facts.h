// What a trained policy file (GDP's or Mars's, `devplace train`) says
// besides its network: the cluster it was trained for, device by device,
// and what it was trained on. A policy's output is a device per unit of
// that cluster: on another device count, or other kinds in another order,
// its placements would mean something else, so loading it for such a
// cluster is a one-line error.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "learned/files/checkpoint_facts.h"

namespace devplace {

struct PolicyFileFacts {
  std::string cluster_name;
  std::vector<std::string> device_kinds;  // per device, in order
  std::vector<std::string> graphs;        // what it was trained on
  int64_t updates = 0;
  // Distilled from search (`train --imitate-search N`): mcmc's evaluations
  // per (graph, cluster) pair for the targets it imitated; 0 when trained
  // by reinforcement alone. Written only when not 0.
  int64_t imitated_search_evaluations = 0;
  std::string imitation_weighting;  // with it: "uniform" or "flops"
};

// The facts of a policy trained on `graphs` for `cluster`.
PolicyFileFacts PolicyFileFactsFor(const Cluster& cluster, std::vector<std::string> graphs, int64_t updates);

// Adds the facts' fields to a file's JSON facts.
void WritePolicyFileFacts(const PolicyFileFacts& facts, nlohmann::json& out);
PolicyFileFacts ReadPolicyFileFacts(const CheckpointFacts& facts);

// Throws Error naming `path` when the policy (of `devices` outputs) was not
// trained for `cluster`'s device count and kinds. `method`: "GDP", "Mars".
void RequireTrainedFor(const std::string& path, const std::string& method, const PolicyFileFacts& facts, int64_t devices,
                       const Cluster& cluster);

}  // namespace devplace
