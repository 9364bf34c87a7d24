// Random clusters from a seed: machines no preset describes, for training a
// policy across clusters and for benchmarking on clusters nobody tuned for.
// A cluster is a host CPU (optional) and GPUs of one to four generations,
// K80 to H100 (src/cluster/cluster_generator.cc cites every figure), with
// PCIe links to the host, optionally on shared switches, and NVLink between
// GPUs of a generation that has it. docs/cluster-format.md lists the
// profiles and the ranges every value stays in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster.h"

namespace devplace {

// Named settings of the knobs below.
//   mixed:  1-3 generations, memory from tight to ample (the default)
//   hetero: 2-4 generations, the fastest GPU at least 4x the slowest's peak,
//           the largest usable memory at least 2x the smallest
//   tight:  every GPU keeps at most 6 GiB for the graph, and the host 16-64 GiB
enum class ClusterProfile { kMixed, kHetero, kTight };

const char* ClusterProfileName(ClusterProfile profile);
std::optional<ClusterProfile> ParseClusterProfile(std::string_view name);
std::vector<std::string> ClusterProfileNames();

struct ClusterGeneratorOptions {
  // The profile these settings came from; goes into the cluster's name.
  std::string profile_name = "mixed";
  // Device count, the CPU included; each cluster draws one uniformly in
  // [min_devices, max_devices] (1..kMaxDevices).
  int32_t min_devices = 2;
  int32_t max_devices = 16;
  // Device 0 is the host CPU. Every built-in model has CPU-only ops (its
  // input), so a cluster without one runs only graphs without such ops.
  bool include_cpu = true;

  // GPU generations (distinct models) in one cluster, 1..the catalog's size.
  int32_t min_generations = 1;
  int32_t max_generations = 3;
  // The fastest GPU's peak over the slowest's, at least this where a
  // cluster has two or more GPUs (1 = no constraint; at most 8).
  double min_speed_ratio = 1;
  // The largest usable GPU memory over the smallest, likewise (1..16).
  double min_memory_ratio = 1;
  // Share of each GPU's capacity the graph may use, drawn per generation in
  // [min, max] (0 < min <= max <= 1); the rest is reserved_bytes (other
  // jobs, the framework). Then capped at max_usable_gpu_gib (0 = no cap).
  double min_usable_fraction = 0.2;
  double max_usable_fraction = 1.0;
  double max_usable_gpu_gib = 0;
  // Host memory in GiB, a power of two drawn in [min, max] (1..65536).
  int64_t min_cpu_memory_gib = 64;
  int64_t max_cpu_memory_gib = 1024;
  // Chance that a generation with NVLink gets its native NVLink topology
  // (hybrid cube-mesh for P100/V100, NVSwitch for A100/H100), and that the
  // GPUs share PCIe switches (buses of 2 or 4) rather than each having its
  // own lanes to the host.
  double nvlink_probability = 0.5;
  double shared_bus_probability = 0.5;

  // The settings of a named profile, with the default device range.
  static ClusterGeneratorOptions ForProfile(ClusterProfile profile);
};

// Throws Error naming the first option out of its range.
void CheckClusterGeneratorOptions(const ClusterGeneratorOptions& options);

// The finalized cluster of `seed`: the same options and seed give the same
// cluster (and the same cluster file, byte for byte) in every run. Its name
// is "gen-<profile>-<seed>".
Cluster GenerateCluster(const ClusterGeneratorOptions& options, uint64_t seed);

// The index-th cluster of the stream `seed`, for drawing thousands of
// clusters deterministically: GenerateCluster with ClusterStreamSeed(seed,
// index), named "gen-<profile>-<seed>-<index>".
Cluster GenerateClusterAt(const ClusterGeneratorOptions& options, uint64_t seed, uint64_t index);
uint64_t ClusterStreamSeed(uint64_t seed, uint64_t index);

// The GPU models the generator draws from, for tests and docs.
struct GpuGeneration {
  const char* name;
  int64_t peak_gflops_per_s;
  int64_t memory_bandwidth_gb_per_s;
  std::vector<int64_t> memory_mib;  // the capacities it comes in
  double launch_overhead_us;
  int32_t pcie_generation;          // 3, 4 or 5
  int64_t nvlink_gb_per_s;          // per direction between two GPUs; 0 if none
  double nvlink_latency_us;
  bool nvswitch;                    // NVLink through a switch: every pair linked
};
const std::vector<GpuGeneration>& GpuCatalog();

// Lowest clock factor a GPU's peak is drawn with (power caps, clocks):
// each generation in a cluster runs at 0.85..1.00 of its datasheet peak.
inline constexpr double kMinClockFactor = 0.85;

}  // namespace devplace
