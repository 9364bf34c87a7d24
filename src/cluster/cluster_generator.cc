#include "cluster/cluster_generator.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "util/error.h"
#include "util/random.h"

namespace devplace {
namespace {

constexpr int64_t kMiB = 1024ll * 1024;
constexpr int64_t kGiB = 1024 * kMiB;
constexpr double kGiga = 1e9;

// Host CPUs. Peak: cores x base clock x FP32 FLOP per cycle (32 with two
// 256-bit FMA units, AVX2 and Zen 4; 64 with two AVX-512 FMA units); memory
// bandwidth: channels x transfer rate x 8 bytes (Intel ARK, AMD product
// pages). Haswell, Broadwell and Sapphire Rapids are the presets' CPUs.
struct HostCpu {
  const char* name;
  int64_t peak_gflops_per_s;
  double memory_bandwidth_gb_per_s;
  int32_t pcie_generation;
  double launch_overhead_us;
};

const std::vector<HostCpu>& CpuCatalog() {
  static const std::vector<HostCpu> cpus = {
      {"xeon-e5-2699v3", 18 * 2300 * 32 / 1000, 68, 3, 5},     // 18 cores, 4 x DDR4-2133
      {"xeon-e5-2698v4", 20 * 2200 * 32 / 1000, 76.8, 3, 5},   // 20 cores, 4 x DDR4-2400
      {"xeon-gold-6248", 20 * 2500 * 64 / 1000, 140.8, 3, 5},  // 20 cores, 6 x DDR4-2933
      {"epyc-7742", 64 * 2250 * 32 / 1000, 204.8, 4, 4},       // 64 cores, 8 x DDR4-3200
      {"xeon-8380", 40 * 2300 * 64 / 1000, 204.8, 4, 4},       // 40 cores, 8 x DDR4-3200
      {"xeon-8480c", 56 * 2000 * 64 / 1000, 307, 5, 4},        // 56 cores, 8 x DDR5-4800
      {"epyc-9654", 96 * 2400 * 32 / 1000, 460.8, 5, 4},       // 96 cores, 12 x DDR5-4800
  };
  return cpus;
}

// Copy bandwidth and per-copy latency of a PCIe x16 link by generation.
// Gen 3: 12 GB/s of 15.75 raw (pinned cudaMemcpy in NVIDIA's
// bandwidthTest), 10 us as the K80 preset; gen 4: about 25 GB/s of 31.5
// raw; gen 5: about 50 GB/s of 63 raw, as the H100 preset.
struct PcieLink {
  int64_t gb_per_s;
  double latency_us;
};
PcieLink Pcie(int32_t generation) {
  if (generation >= 5) return {50, 8};
  if (generation == 4) return {25, 9};
  return {12, 10};
}

// The profile's knobs, checked against what they describe.
void RequireOption(bool ok, const std::string& what) {
  if (!ok) throw Error("cluster generator: " + what);
}

bool InUnitInterval(double x) { return std::isfinite(x) && x >= 0 && x <= 1; }

// Uniform integer in [lo, hi].
int64_t Between(Random& random, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(random.Below(static_cast<uint64_t>(hi - lo + 1)));
}

bool Chance(Random& random, double probability) { return random.Uniform() < probability; }

// Generations whose nominal peak is at least `ratio` / kMinClockFactor
// away from `g`'s, either way: a pair of them keeps `ratio` at any clock.
std::vector<int32_t> FarEnoughFrom(int32_t g, double ratio) {
  const auto& catalog = GpuCatalog();
  const double needed = ratio / kMinClockFactor;
  std::vector<int32_t> far;
  for (int32_t other = 0; other < static_cast<int32_t>(catalog.size()); ++other) {
    const double a = static_cast<double>(catalog[g].peak_gflops_per_s);
    const double b = static_cast<double>(catalog[other].peak_gflops_per_s);
    if (std::max(a, b) >= needed * std::min(a, b)) far.push_back(other);
  }
  return far;
}

// One generation's GPUs in a cluster: all alike, so that placers that merge
// identical devices still can.
struct GpuGroup {
  int32_t generation = 0;
  int32_t count = 0;
  int64_t peak_gflops_per_s = 0;
  int64_t memory_mib = 0;
  int64_t usable_mib = 0;
  bool nvlink = false;
};

std::vector<GpuGroup> DrawGpuGroups(const ClusterGeneratorOptions& o, int32_t num_gpus, Random& random) {
  const auto& catalog = GpuCatalog();
  const int32_t catalog_size = static_cast<int32_t>(catalog.size());
  int32_t num_groups = static_cast<int32_t>(Between(random, o.min_generations, o.max_generations));
  num_groups = std::min(num_groups, num_gpus);
  if (num_gpus >= 2 && o.min_speed_ratio > 1) num_groups = std::max(num_groups, 2);
  // Distinct generations, in the order drawn; where a speed ratio is asked,
  // the second is drawn among those far enough from the first.
  std::vector<int32_t> generations;
  while (static_cast<int32_t>(generations.size()) < num_groups) {
    std::vector<int32_t> candidates;
    if (generations.size() == 1 && o.min_speed_ratio > 1) {
      candidates = FarEnoughFrom(generations[0], o.min_speed_ratio);
    } else {
      for (int32_t g = 0; g < catalog_size; ++g) candidates.push_back(g);
    }
    std::erase_if(candidates, [&](int32_t g) { return std::ranges::find(generations, g) != generations.end(); });
    generations.push_back(candidates[random.Below(candidates.size())]);
  }
  // Split the GPUs into num_groups non-empty runs: num_groups - 1 distinct
  // cut points among num_gpus - 1.
  std::vector<int32_t> cuts;
  while (static_cast<int32_t>(cuts.size()) < num_groups - 1) {
    const int32_t cut = static_cast<int32_t>(Between(random, 1, num_gpus - 1));
    if (std::ranges::find(cuts, cut) == cuts.end()) cuts.push_back(cut);
  }
  std::ranges::sort(cuts);
  cuts.push_back(num_gpus);
  std::vector<GpuGroup> groups;
  int32_t start = 0;
  for (int32_t i = 0; i < num_groups; ++i) {
    const GpuGeneration& gen = catalog[generations[i]];
    GpuGroup group;
    group.generation = generations[i];
    group.count = cuts[i] - start;
    start = cuts[i];
    const int64_t clock_percent = Between(random, static_cast<int64_t>(std::lround(kMinClockFactor * 100)), 100);
    group.peak_gflops_per_s = gen.peak_gflops_per_s * clock_percent / 100;
    group.memory_mib = gen.memory_mib[random.Below(gen.memory_mib.size())];
    const double fraction = o.min_usable_fraction + (o.max_usable_fraction - o.min_usable_fraction) * random.Uniform();
    group.usable_mib = static_cast<int64_t>(static_cast<double>(group.memory_mib) * fraction);
    if (o.max_usable_gpu_gib > 0) {
      group.usable_mib = std::min(group.usable_mib, static_cast<int64_t>(o.max_usable_gpu_gib * 1024));
    }
    group.usable_mib = std::max<int64_t>(1, group.usable_mib);
    group.nvlink = gen.nvlink_gb_per_s > 0 && group.count >= 2 && Chance(random, o.nvlink_probability);
    groups.push_back(group);
  }
  if (groups.size() >= 2 && o.min_memory_ratio > 1) {
    // The group with the least usable memory gives up more, as if another
    // job held it: the ratio holds whatever the capacities drawn.
    auto [least, most] = std::ranges::minmax_element(groups, {}, &GpuGroup::usable_mib);
    const auto ceiling = static_cast<int64_t>(static_cast<double>(most->usable_mib) / o.min_memory_ratio);
    least->usable_mib = std::max<int64_t>(1, std::min(least->usable_mib, ceiling));
  }
  return groups;
}

}  // namespace

const std::vector<GpuGeneration>& GpuCatalog() {
  // Peak is what a framework gets for FP32 training by default: FP32 before
  // Ampere, dense TF32 on tensor cores from Ampere on, as the h100x8 preset.
  // Capacities as nvidia-smi reports them where the presets measured them
  // (K80, P100, H100), else the nominal size. NVLink per direction between
  // two GPUs. Sources: NVIDIA datasheets and whitepapers of each GPU.
  static const std::vector<GpuGeneration> catalog = {
      // K80 die: half of the 8.73 TFLOP/s, 480 GB/s, 2 x 12 GB board.
      {"k80", 4365, 240, {11441}, 10, 3, 0, 0, false},
      // T4: 8.1 TFLOP/s FP32, 320 GB/s, 16 GB GDDR6.
      {"t4", 8100, 320, {15360}, 7, 3, 0, 0, false},
      // P100 SXM2: 10.6 TFLOP/s, 732 GB/s, 12 or 16 GB; NVLink 1 20 GB/s.
      {"p100", 10600, 732, {12288, 16280}, 8, 3, 20, 5, false},
      // V100 SXM2: 15.7 TFLOP/s, 900 GB/s, 16 or 32 GB; NVLink 2 25 GB/s
      // a link.
      {"v100", 15700, 900, {16384, 32768}, 7, 3, 25, 4, false},
      // A10: 62.5 TFLOP/s TF32, 600 GB/s, 24 GB GDDR6.
      {"a10", 62500, 600, {24576}, 6, 4, 0, 0, false},
      // L4: 60 TFLOP/s TF32 (120 with sparsity), 300 GB/s, 24 GB.
      {"l4", 60000, 300, {24576}, 5, 4, 0, 0, false},
      // A100 SXM4 40 GB: 156 TFLOP/s TF32, 1555 GB/s; NVSwitch 300 GB/s.
      {"a100-40gb", 156000, 1555, {40960}, 6, 4, 300, 3, true},
      // A100 SXM4 80 GB: 2039 GB/s.
      {"a100-80gb", 156000, 2039, {81920}, 6, 4, 300, 3, true},
      // H100 SXM5: 494.7 TFLOP/s TF32, 3.35 TB/s, 80 GB; NVSwitch 450 GB/s.
      {"h100", 494700, 3350, {81559}, 5, 5, 450, 3, true},
  };
  return catalog;
}

const char* ClusterProfileName(ClusterProfile profile) {
  switch (profile) {
    case ClusterProfile::kMixed: return "mixed";
    case ClusterProfile::kHetero: return "hetero";
    case ClusterProfile::kTight: return "tight";
  }
  return "mixed";
}

std::optional<ClusterProfile> ParseClusterProfile(std::string_view name) {
  for (ClusterProfile p : {ClusterProfile::kMixed, ClusterProfile::kHetero, ClusterProfile::kTight}) {
    if (name == ClusterProfileName(p)) return p;
  }
  return std::nullopt;
}

std::vector<std::string> ClusterProfileNames() { return {"mixed", "hetero", "tight"}; }

ClusterGeneratorOptions ClusterGeneratorOptions::ForProfile(ClusterProfile profile) {
  ClusterGeneratorOptions o;
  o.profile_name = ClusterProfileName(profile);
  switch (profile) {
    case ClusterProfile::kMixed:
      break;
    case ClusterProfile::kHetero:
      o.min_generations = 2;
      o.max_generations = 4;
      o.min_speed_ratio = 4;
      o.min_memory_ratio = 2;
      o.min_usable_fraction = 0.3;
      break;
    case ClusterProfile::kTight:
      o.min_usable_fraction = 0.1;
      o.max_usable_fraction = 0.4;
      o.max_usable_gpu_gib = 6;
      o.min_cpu_memory_gib = 16;
      o.max_cpu_memory_gib = 64;
      break;
  }
  return o;
}

void CheckClusterGeneratorOptions(const ClusterGeneratorOptions& o) {
  const std::string devices = std::to_string(kMaxDevices);
  RequireOption(o.min_devices >= 1 && o.min_devices <= kMaxDevices,
          "the least device count must be 1.." + devices + " (got " + std::to_string(o.min_devices) + ")");
  RequireOption(o.max_devices >= 1 && o.max_devices <= kMaxDevices,
          "the largest device count must be 1.." + devices + " (got " + std::to_string(o.max_devices) + ")");
  RequireOption(o.min_devices <= o.max_devices, "the least device count (" + std::to_string(o.min_devices) +
                                              ") is above the largest (" + std::to_string(o.max_devices) + ")");
  const auto generations = static_cast<int32_t>(GpuCatalog().size());
  RequireOption(o.min_generations >= 1 && o.max_generations <= generations && o.min_generations <= o.max_generations,
          "generations must satisfy 1 <= min <= max <= " + std::to_string(generations));
  RequireOption(std::isfinite(o.min_speed_ratio) && o.min_speed_ratio >= 1 && o.min_speed_ratio <= 8,
          "the speed ratio must be 1..8");
  RequireOption(std::isfinite(o.min_memory_ratio) && o.min_memory_ratio >= 1 && o.min_memory_ratio <= 16,
          "the memory ratio must be 1..16");
  RequireOption(InUnitInterval(o.min_usable_fraction) && InUnitInterval(o.max_usable_fraction) &&
              o.min_usable_fraction > 0 && o.min_usable_fraction <= o.max_usable_fraction,
          "usable fractions must satisfy 0 < min <= max <= 1");
  RequireOption(std::isfinite(o.max_usable_gpu_gib) && o.max_usable_gpu_gib >= 0 && o.max_usable_gpu_gib <= 1e6,
          "the usable GPU memory cap must be 0 (none) or a positive number of GiB up to 10^6");
  auto power_of_two = [](int64_t x) { return x >= 1 && x <= 65536 && (x & (x - 1)) == 0; };
  RequireOption(power_of_two(o.min_cpu_memory_gib) && power_of_two(o.max_cpu_memory_gib) &&
              o.min_cpu_memory_gib <= o.max_cpu_memory_gib,
          "host memory must be powers of two 1..65536 GiB with min <= max");
  RequireOption(InUnitInterval(o.nvlink_probability) && InUnitInterval(o.shared_bus_probability),
          "probabilities must be 0..1");
  // Every generation needs a partner at the asked speed ratio.
  for (int32_t g = 0; g < generations && o.min_speed_ratio > 1; ++g) {
    RequireOption(!FarEnoughFrom(g, o.min_speed_ratio).empty(),
            "no GPU generation is far enough in speed from " + std::string(GpuCatalog()[g].name));
  }
}

Cluster GenerateCluster(const ClusterGeneratorOptions& o, uint64_t seed) {
  CheckClusterGeneratorOptions(o);
  Random random(seed);
  Cluster c;
  c.name = "gen-" + o.profile_name + "-" + std::to_string(seed);
  const auto num_devices = static_cast<int32_t>(Between(random, o.min_devices, o.max_devices));
  const int32_t num_gpus = num_devices - (o.include_cpu ? 1 : 0);
  const std::vector<GpuGroup> groups = DrawGpuGroups(o, num_gpus, random);
  const auto& catalog = GpuCatalog();

  int32_t host_pcie = 3;
  if (o.include_cpu) {
    // A host whose PCIe is at least as new as its newest GPU's, as a
    // machine is built.
    int32_t needed = 3;
    for (const GpuGroup& g : groups) needed = std::max(needed, catalog[g.generation].pcie_generation);
    std::vector<const HostCpu*> hosts;
    for (const HostCpu& cpu : CpuCatalog()) {
      if (cpu.pcie_generation >= needed) hosts.push_back(&cpu);
    }
    const HostCpu& cpu = *hosts[random.Below(hosts.size())];
    host_pcie = cpu.pcie_generation;
    int32_t log2_min = 0, log2_max = 0;
    while ((int64_t{1} << log2_min) < o.min_cpu_memory_gib) ++log2_min;
    while ((int64_t{1} << log2_max) < o.max_cpu_memory_gib) ++log2_max;
    const int64_t memory_gib = int64_t{1} << Between(random, log2_min, log2_max);
    Device host;
    host.name = "cpu:0";
    host.kind = DeviceKind::kCpu;
    host.peak_flops_per_s = static_cast<double>(cpu.peak_gflops_per_s) * kGiga;
    host.memory_bandwidth_bytes_per_s = cpu.memory_bandwidth_gb_per_s * kGiga;
    host.memory_bytes = memory_gib * kGiB;
    host.launch_overhead_us = cpu.launch_overhead_us;
    c.devices.push_back(std::move(host));
  }
  const int32_t first_gpu = static_cast<int32_t>(c.devices.size());
  std::vector<int32_t> group_of;  // by GPU index
  for (int32_t gi = 0; gi < static_cast<int32_t>(groups.size()); ++gi) {
    const GpuGroup& g = groups[gi];
    const GpuGeneration& gen = catalog[g.generation];
    for (int32_t k = 0; k < g.count; ++k) {
      const auto index = static_cast<int32_t>(group_of.size());
      Device gpu;
      gpu.name = "gpu:" + std::to_string(index);
      gpu.kind = DeviceKind::kGpu;
      gpu.peak_flops_per_s = static_cast<double>(g.peak_gflops_per_s) * kGiga;
      gpu.memory_bandwidth_bytes_per_s = static_cast<double>(gen.memory_bandwidth_gb_per_s) * kGiga;
      gpu.memory_bytes = g.memory_mib * kMiB;
      gpu.reserved_bytes = (g.memory_mib - g.usable_mib) * kMiB;
      gpu.launch_overhead_us = gen.launch_overhead_us;
      c.devices.push_back(std::move(gpu));
      group_of.push_back(gi);
    }
  }
  auto pcie_between = [&](int32_t gpu_a, int32_t gpu_b) {
    return Pcie(std::min(catalog[groups[group_of[gpu_a]].generation].pcie_generation,
                         catalog[groups[group_of[gpu_b]].generation].pcie_generation));
  };

  // NVLink inside a group: NVSwitch links every pair; the DGX-1 hybrid
  // cube-mesh (P100, V100) links each quad fully and GPU i to i + 4 of its
  // block of eight.
  std::vector<std::vector<bool>> nvlinked(num_gpus, std::vector<bool>(num_gpus, false));
  int32_t group_start = 0;
  for (const GpuGroup& g : groups) {
    const GpuGeneration& gen = catalog[g.generation];
    if (g.nvlink) {
      for (int32_t i = 0; i < g.count; ++i) {
        for (int32_t j = i + 1; j < g.count; ++j) {
          const bool cube_mesh = (i / 4 == j / 4) || (i / 8 == j / 8 && j == i + 4);
          if (!gen.nvswitch && !cube_mesh) continue;
          nvlinked[group_start + i][group_start + j] = true;
          c.links.push_back({first_gpu + group_start + i, first_gpu + group_start + j,
                             static_cast<double>(gen.nvlink_gb_per_s) * kGiga, gen.nvlink_latency_us, -1});
        }
      }
    }
    group_start += g.count;
  }

  if (o.include_cpu) {
    // Host links, host side first so that the links of one switch share its
    // bus in the same orientation. On a switch, GPUs may copy peer to peer
    // through it (the K80 board's PLX) or stage through the host.
    const int32_t per_switch = Chance(random, o.shared_bus_probability) ? (Chance(random, 0.5) ? 2 : 4) : 1;
    const bool switch_peer_copies = per_switch > 1 && Chance(random, 0.5);
    for (int32_t i = 0; i < num_gpus; ++i) {
      const GpuGeneration& gen = catalog[groups[group_of[i]].generation];
      const PcieLink pcie = Pcie(std::min(host_pcie, gen.pcie_generation));
      int32_t bus = -1;
      const int32_t switch_start = i / per_switch * per_switch;
      if (per_switch > 1 && std::min(switch_start + per_switch, num_gpus) - switch_start >= 2) {
        const std::string name = "pcie-switch" + std::to_string(i / per_switch);
        if (c.buses.empty() || c.buses.back() != name) c.buses.push_back(name);
        bus = static_cast<int32_t>(c.buses.size()) - 1;
      }
      c.links.push_back({0, first_gpu + i, static_cast<double>(pcie.gb_per_s) * kGiga, pcie.latency_us, bus});
      if (!switch_peer_copies) continue;
      for (int32_t j = switch_start; j < i; ++j) {
        if (nvlinked[j][i]) continue;
        const PcieLink peer = pcie_between(j, i);
        c.links.push_back({first_gpu + j, first_gpu + i, static_cast<double>(peer.gb_per_s) * kGiga, peer.latency_us, -1});
      }
    }
  } else {
    // No host device to stage through: GPUs copy peer to peer over PCIe.
    for (int32_t i = 0; i < num_gpus; ++i) {
      for (int32_t j = i + 1; j < num_gpus; ++j) {
        if (nvlinked[i][j]) continue;
        const PcieLink peer = pcie_between(i, j);
        c.links.push_back({first_gpu + i, first_gpu + j, static_cast<double>(peer.gb_per_s) * kGiga, peer.latency_us, -1});
      }
    }
  }
  c.Finalize(c.name);
  return c;
}

uint64_t ClusterStreamSeed(uint64_t seed, uint64_t index) {
  // Two SplitMix64 steps: neighbouring (seed, index) pairs land far apart,
  // and stream s's cluster i is not stream s + 1's cluster i - 1.
  Random mix(seed);
  const uint64_t base = mix.NextU64();
  Random second(base ^ (index * 0xD1B54A32D192ED03ull));
  return second.NextU64();
}

Cluster GenerateClusterAt(const ClusterGeneratorOptions& options, uint64_t seed, uint64_t index) {
  Cluster c = GenerateCluster(options, ClusterStreamSeed(seed, index));
  c.name = "gen-" + options.profile_name + "-" + std::to_string(seed) + "-" + std::to_string(index);
  return c;
}

}  // namespace devplace
