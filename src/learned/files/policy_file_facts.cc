#include "learned/files/policy_file_facts.h"

#include "util/error.h"

namespace devplace {

PolicyFileFacts PolicyFileFactsFor(const Cluster& cluster, std::vector<std::string> graphs, int64_t updates) {
  PolicyFileFacts facts;
  facts.cluster_name = cluster.name;
  for (const Device& d : cluster.devices) facts.device_kinds.push_back(DeviceKindName(d.kind));
  facts.graphs = std::move(graphs);
  facts.updates = updates;
  return facts;
}

void WritePolicyFileFacts(const PolicyFileFacts& facts, nlohmann::json& out) {
  out["cluster"] = facts.cluster_name;
  out["device_kinds"] = facts.device_kinds;
  out["graphs"] = facts.graphs;
  out["updates"] = facts.updates;
  if (facts.imitated_search_evaluations > 0) {
    out["imitated_search_evaluations"] = facts.imitated_search_evaluations;
    out["imitation_weighting"] = facts.imitation_weighting;
  }
}

PolicyFileFacts ReadPolicyFileFacts(const CheckpointFacts& facts) {
  PolicyFileFacts out;
  out.cluster_name = facts.String("cluster");
  for (const nlohmann::json& kind : facts.Array("device_kinds")) {
    if (!kind.is_string()) facts.Fail("'device_kinds' holds something other than names");
    out.device_kinds.push_back(kind.get<std::string>());
  }
  for (const nlohmann::json& graph : facts.Array("graphs")) {
    if (!graph.is_string()) facts.Fail("'graphs' holds something other than names");
    out.graphs.push_back(graph.get<std::string>());
  }
  out.updates = facts.Integer("updates", 0, INT64_MAX);
  if (facts.facts().contains("imitated_search_evaluations")) {
    out.imitated_search_evaluations = facts.Integer("imitated_search_evaluations", 1, INT64_MAX);
    if (facts.facts().contains("imitation_weighting")) out.imitation_weighting = facts.String("imitation_weighting");
  }
  return out;
}

void RequireTrainedFor(const std::string& path, const std::string& method, const PolicyFileFacts& facts, int64_t devices,
                       const Cluster& cluster) {
  if (static_cast<int64_t>(facts.device_kinds.size()) != devices) {
    throw Error(ForMessage(path) + ": 'device_kinds' does not list the policy's " + std::to_string(devices) + " devices");
  }
  std::vector<std::string> kinds;
  for (const Device& d : cluster.devices) kinds.push_back(DeviceKindName(d.kind));
  if (devices == cluster.num_devices() && kinds == facts.device_kinds) return;
  std::string trained, given;
  for (const std::string& k : facts.device_kinds) trained += (trained.empty() ? "" : ",") + k;
  for (const std::string& k : kinds) given += (given.empty() ? "" : ",") + k;
  throw Error(ForMessage(path) + ": the " + method + " policy was trained for " + std::to_string(devices) + " devices (" +
              ForMessage(trained, 200) + ", cluster '" + ForMessage(facts.cluster_name) + "'), not for cluster '" +
              ForMessage(cluster.name) + "' of " + std::to_string(cluster.num_devices()) + " (" + ForMessage(given, 200) + ")");
}

}  // namespace devplace
