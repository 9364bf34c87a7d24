// The machine a step runs on: devices with their speed and memory, the links
// between them, and which links share one bus. Routes between every pair of
// devices are computed once, so the simulator only looks them up.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace devplace {

// The simulator tracks a tensor's destinations in a 64-bit mask.
inline constexpr int32_t kMaxDevices = 64;
// Far more than any device runs at once, and small enough that the sum over
// kMaxDevices devices stays an easy int32.
inline constexpr int32_t kMaxParallelOps = 1024;
// CPU core numbers a device may own: those a cpu_set_t holds (CPU_SETSIZE).
inline constexpr int32_t kMaxCores = 1024;
// The longest wake-up (and idle time before one) a device may declare: a
// second.
inline constexpr double kMaxWakeUpUs = 1e6;

struct Device {
  std::string name;  // "cpu:0", "gpu:1", ...
  DeviceKind kind = DeviceKind::kGpu;
  double peak_flops_per_s = 0;
  double memory_bandwidth_bytes_per_s = 0;
  int64_t memory_bytes = 0;
  // Memory the framework holds that the graph does not show: the CUDA
  // context, library workspaces, the allocator's slack. Tensors get the rest.
  int64_t reserved_bytes = 0;
  double launch_overhead_us = 0;  // fixed cost added to every op
  int32_t parallel_ops = 1;       // ops it runs at once, each at full speed
  // Waking an idle device: once it has run nothing for at least
  // wake_up_after_idle_us, its next op or copy starts wake_up_us late. A
  // CPU device of this machine is worker threads that sleep when idle, and
  // a core the guest let sleep long takes tens of microseconds to run again
  // (`clusters --detect` measures both); 0 for devices that stay awake.
  double wake_up_us = 0;
  double wake_up_after_idle_us = 0;
  // Where the device is on this machine, for the real executor (devplace
  // run): the CPU cores a CPU device owns, or a GPU's CUDA index. Empty / -1
  // in a cluster that describes another machine (every preset); only
  // `devplace clusters --detect` writes them.
  std::vector<int32_t> cores;
  int32_t cuda_index = -1;

  // A CPU device made of this machine's own cores: such devices share
  // caches and memory bandwidth (OpTimeTable::host_contention).
  bool is_host_cpu() const { return kind == DeviceKind::kCpu && !cores.empty(); }

  // What the graph's tensors may use: the capacity every OOM check is against.
  int64_t usable_memory_bytes() const { return memory_bytes - reserved_bytes; }
};

// A full-duplex link between devices a and b: each direction carries one
// transfer at a time. Links on the same bus share it: all their a->b
// transfers queue on one channel and all their b->a transfers on another, so
// give links on one bus the same orientation (a on the host side).
struct Link {
  int32_t a = 0;
  int32_t b = 0;
  double bandwidth_bytes_per_s = 0;
  double latency_us = 0;
  int32_t bus = -1;  // index into Cluster::buses, or -1
};

// Two devices with the same specification (everything but name and where
// they are on this machine), and two links of the same speed.
bool SameDevice(const Device& x, const Device& y);
bool SameLinkSpeed(const Link& x, const Link& y);

// One leg of a route: a link, in one direction, and the serial channel that
// direction occupies.
struct Hop {
  int32_t link = 0;
  int32_t from = 0;
  int32_t to = 0;
  int32_t channel = 0;
};

class Cluster {
 public:
  std::string name;
  std::vector<Device> devices;
  std::vector<Link> links;
  std::vector<std::string> buses;

  // Validates and computes routes: fewest hops, then widest bottleneck.
  // Devices without a direct link talk through intermediate devices (a GPU
  // with no peer link stages through host memory). Throws Error naming
  // `source` on a bad cluster: speeds, bandwidths and capacities that are
  // not finite and positive, names that are empty, duplicated or not UTF-8,
  // more than kMaxDevices devices, parallel_ops outside 1..kMaxParallelOps.
  void Finalize(const std::string& source = "cluster");

  int32_t num_devices() const { return static_cast<int32_t>(devices.size()); }
  int32_t FindDevice(std::string_view name) const;  // -1 if absent

  // The hops a tensor takes from `src` to `dst` (empty when equal).
  std::span<const Hop> Route(int32_t src, int32_t dst) const {
    const auto& r = route_offsets_[src * num_devices() + dst];
    return {hops_.data() + r.first, hops_.data() + r.second};
  }

  // Serial channels: two per bus-less link, two per bus.
  int32_t num_channels() const { return static_cast<int32_t>(2 * links.size() + 2 * buses.size()); }
  std::string ChannelName(int32_t channel) const;

  // Time of one transfer of `bytes` over one hop.
  double HopTimeUs(const Hop& hop, int64_t bytes) const {
    const Link& link = links[hop.link];
    return link.latency_us + static_cast<double>(bytes) / link.bandwidth_bytes_per_s * 1e6;
  }

  // The CPU device of this machine whose core does a copy from `from` to
  // `to` (one hop): the receiver, or the sender when the receiver is not
  // one (a GPU's copy is driven from the host); -1 where neither is (GPU to
  // GPU, and every preset, whose devices own no cores). The executor runs
  // the copy on that device's worker, and the simulator models it so.
  int32_t CopyEngine(int32_t from, int32_t to) const {
    if (devices[to].is_host_cpu()) return to;
    if (devices[from].is_host_cpu()) return from;
    return -1;
  }

  // Device kinds present, as a mask.
  DeviceKindMask kinds_present() const;

 private:
  void CheckDevices(const std::string& where) const;
  void CheckLinks(const std::string& where) const;

  std::vector<Hop> hops_;
  std::vector<std::pair<int32_t, int32_t>> route_offsets_;
};

}  // namespace devplace
