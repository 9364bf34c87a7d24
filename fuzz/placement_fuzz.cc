// libFuzzer target: the placement file reader (docs/placement-format.md),
// against the docs' example graph and cluster; a placement that loads is
// checked and simulated, as `devplace simulate` would. A bad input must end
// in devplace::Error; anything else is a finding.
#include "cluster/cluster_json.h"
#include "cost/cost_model.h"
#include "fuzz/fuzz_input.h"
#include "graph/graph_json.h"
#include "sim/placement.h"
#include "sim/simulator.h"
#include "util/error.h"

namespace {

// docs/graph-format.md's and docs/cluster-format.md's examples (also
// tests/bad_inputs/good_graph.json and good_cluster.json).
constexpr const char* kGraph = R"({"format": "devplace-graph", "version": 1, "name": "my_model", "expert_stages": 2,
  "ops": [
    {"id": 0, "name": "input/batch", "type": "IteratorGetNext", "phase": "forward",
     "outputs": [{"shape": [64, 1024], "dtype": "float32"}], "devices": ["cpu"], "expert_stage": -1},
    {"id": 1, "name": "layer0/weights", "type": "VariableV2",
     "outputs": [{"shape": [1024, 1024], "dtype": "float32", "bytes": 4194304}],
     "persistent_bytes": 12582912, "colocation_group": "layer0", "expert_stage": 0},
    {"id": 2, "name": "layer0/MatMul", "type": "MatMul", "phase": "forward",
     "flops": 134217728, "bytes_read": 4456448, "bytes_written": 262144, "outputs": [{"shape": [64, 1024]}],
     "colocation_group": "layer0", "expert_stage": 0, "inputs": [{"op": 0, "output": 0}, {"op": 1}]}]})";

constexpr const char* kCluster = R"({"format": "devplace-cluster", "version": 1, "name": "my_box",
  "devices": [
    {"name": "cpu:0", "kind": "cpu", "peak_tflops": 1.3, "memory_bandwidth_gb_per_s": 68, "memory_gib": 64,
     "launch_overhead_us": 5, "parallel_ops": 1},
    {"name": "gpu:0", "kind": "gpu", "peak_tflops": 10.6, "memory_bandwidth_gb_per_s": 732,
     "memory_bytes": 17071734784, "launch_overhead_us": 8},
    {"name": "gpu:1", "kind": "gpu", "peak_tflops": 10.6, "memory_bandwidth_gb_per_s": 732,
     "memory_bytes": 17071734784, "launch_overhead_us": 8}],
  "buses": ["pcie-switch0"],
  "links": [
    {"between": ["cpu:0", "gpu:0"], "bandwidth_gb_per_s": 12, "latency_us": 10, "bus": "pcie-switch0"},
    {"between": ["cpu:0", "gpu:1"], "bandwidth_gb_per_s": 12, "latency_us": 10, "bus": "pcie-switch0"},
    {"between": ["gpu:0", "gpu:1"], "bandwidth_gb_per_s": 20, "latency_us": 5}]})";

struct Fixture {
  devplace::Graph graph = devplace::GraphFromJson(nlohmann::json::parse(kGraph), "graph");
  devplace::Cluster cluster = devplace::ClusterFromJson(nlohmann::json::parse(kCluster), "cluster");
  devplace::CostModel cost{cluster};
  devplace::Simulator simulator{graph, cluster, cost};
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* fixture = new Fixture();  // never freed: outlives every input
  try {
    devplace::Placement placement =
        devplace::LoadPlacementFile(devplace::fuzz::InputPath(data, size), fixture->graph, fixture->cluster);
    if (!devplace::CheckPlacement(fixture->graph, fixture->cluster, placement)) {
      (void)fixture->simulator.Run(placement);
    }
  } catch (const devplace::Error&) {
  }
  return 0;
}
