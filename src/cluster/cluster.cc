#include "cluster/cluster.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "util/error.h"
#include "util/json_fields.h"

namespace devplace {

bool SameDevice(const Device& x, const Device& y) {
  return x.kind == y.kind && x.peak_flops_per_s == y.peak_flops_per_s &&
         x.memory_bandwidth_bytes_per_s == y.memory_bandwidth_bytes_per_s && x.memory_bytes == y.memory_bytes &&
         x.reserved_bytes == y.reserved_bytes && x.launch_overhead_us == y.launch_overhead_us &&
         x.parallel_ops == y.parallel_ops && x.wake_up_us == y.wake_up_us && x.wake_up_after_idle_us == y.wake_up_after_idle_us;
}

bool SameLinkSpeed(const Link& x, const Link& y) {
  return x.bandwidth_bytes_per_s == y.bandwidth_bytes_per_s && x.latency_us == y.latency_us;
}

int32_t Cluster::FindDevice(std::string_view device_name) const {
  for (int32_t d = 0; d < num_devices(); ++d) {
    if (devices[d].name == device_name) return d;
  }
  return -1;
}

DeviceKindMask Cluster::kinds_present() const {
  DeviceKindMask mask = 0;
  for (const Device& d : devices) mask |= MaskOf(d.kind);
  return mask;
}

std::string Cluster::ChannelName(int32_t channel) const {
  const int32_t num_link_channels = static_cast<int32_t>(2 * links.size());
  if (channel < num_link_channels) {
    const Link& link = links[channel / 2];
    const std::string& a = devices[link.a].name;
    const std::string& b = devices[link.b].name;
    return channel % 2 == 0 ? a + "->" + b : b + "->" + a;
  }
  int32_t bus_channel = channel - num_link_channels;
  return "bus " + buses[bus_channel / 2] + (bus_channel % 2 == 0 ? " (a->b)" : " (b->a)");
}

namespace {

bool PositiveFinite(double value) { return value > 0 && std::isfinite(value); }
bool NonNegativeFinite(double value) { return value >= 0 && std::isfinite(value); }

}  // namespace

void Cluster::CheckDevices(const std::string& where) const {
  std::set<std::string> names;
  for (const Device& d : devices) {
    if (d.name.empty()) throw Error(where + "a device has an empty name");
    std::string what = where + "device '" + ForMessage(d.name) + "': ";
    if (!IsValidUtf8(d.name)) throw Error(what + "the name is not valid UTF-8");
    if (!names.insert(d.name).second) throw Error(where + "duplicate device name '" + ForMessage(d.name) + "'");
    if (!PositiveFinite(d.peak_flops_per_s)) throw Error(what + "peak FLOP/s must be positive and finite");
    if (!PositiveFinite(d.memory_bandwidth_bytes_per_s)) throw Error(what + "memory bandwidth must be positive and finite");
    if (d.memory_bytes <= 0) throw Error(what + "memory capacity must be positive");
    // Also keeps usable_memory_bytes() positive.
    if (d.reserved_bytes < 0 || d.reserved_bytes >= d.memory_bytes) {
      throw Error(what + "reserved memory must be at least 0 and less than the capacity");
    }
    if (!NonNegativeFinite(d.launch_overhead_us)) throw Error(what + "launch overhead must be finite and not negative");
    // A second at most: more is no wake-up, and keeps step times finite.
    if (!NonNegativeFinite(d.wake_up_us) || d.wake_up_us > kMaxWakeUpUs) {
      throw Error(what + "wake_up_us must be 0.." + std::to_string(static_cast<int64_t>(kMaxWakeUpUs)));
    }
    if (!NonNegativeFinite(d.wake_up_after_idle_us) || d.wake_up_after_idle_us > kMaxWakeUpUs) {
      throw Error(what + "wake_up_after_idle_us must be 0.." + std::to_string(static_cast<int64_t>(kMaxWakeUpUs)));
    }
    if (d.parallel_ops < 1 || d.parallel_ops > kMaxParallelOps) {
      throw Error(what + "parallel_ops must be 1.." + std::to_string(kMaxParallelOps));
    }
    if (!d.cores.empty() && d.kind != DeviceKind::kCpu) throw Error(what + "only a CPU device owns cores");
    if (d.cuda_index >= 0 && d.kind != DeviceKind::kGpu) throw Error(what + "only a GPU has a CUDA index");
    if (d.cuda_index < -1 || d.cuda_index >= kMaxDevices) {
      throw Error(what + "cuda_index must be 0.." + std::to_string(kMaxDevices - 1));
    }
  }
  // A core or a GPU belongs to one device: the executor pins each device's
  // threads to its own cores.
  std::set<int32_t> cores, cuda_indices;
  for (const Device& d : devices) {
    std::string what = where + "device '" + ForMessage(d.name) + "': ";
    for (int32_t core : d.cores) {
      if (core < 0 || core >= kMaxCores) throw Error(what + "core numbers must be 0.." + std::to_string(kMaxCores - 1));
      if (!cores.insert(core).second) throw Error(what + "core " + std::to_string(core) + " belongs to two devices");
    }
    if (d.cuda_index >= 0 && !cuda_indices.insert(d.cuda_index).second) {
      throw Error(what + "CUDA device " + std::to_string(d.cuda_index) + " belongs to two devices");
    }
  }
}

void Cluster::CheckLinks(const std::string& where) const {
  const int32_t n = num_devices();
  // A bus is useful only with a link on it, and a cluster has at most one
  // link per pair of devices; more buses than that only cost memory.
  const size_t max_links = static_cast<size_t>(kMaxDevices) * (kMaxDevices - 1) / 2;
  if (buses.size() > max_links || links.size() > max_links) {
    throw Error(where + "more than " + std::to_string(max_links) + " buses or links (one per pair of 64 devices)");
  }
  std::set<std::string> bus_names;
  for (const std::string& bus : buses) {
    if (!IsValidUtf8(bus)) throw Error(where + "bus '" + ForMessage(bus) + "': the name is not valid UTF-8");
    if (!bus_names.insert(bus).second) throw Error(where + "duplicate bus name '" + ForMessage(bus) + "'");
  }
  std::set<std::pair<int32_t, int32_t>> linked;
  for (const Link& link : links) {
    if (link.a < 0 || link.a >= n || link.b < 0 || link.b >= n) throw Error(where + "a link joins a missing device");
    std::string what = where + "link " + ForMessage(devices[link.a].name) + " - " + ForMessage(devices[link.b].name) + ": ";
    if (link.a == link.b) throw Error(what + "joins a device to itself");
    if (!linked.insert(std::minmax(link.a, link.b)).second) throw Error(what + "duplicate link");
    if (!PositiveFinite(link.bandwidth_bytes_per_s)) throw Error(what + "bandwidth must be positive and finite");
    if (!NonNegativeFinite(link.latency_us)) throw Error(what + "latency must be finite and not negative");
    if (link.bus < -1 || link.bus >= static_cast<int32_t>(buses.size())) throw Error(what + "refers to a missing bus");
  }
}

void Cluster::Finalize(const std::string& source) {
  const std::string where = ForMessage(source) + ": ";
  if (devices.empty()) throw Error(where + "the cluster has no devices");
  if (devices.size() > static_cast<size_t>(kMaxDevices)) {
    throw Error(where + "the cluster has " + std::to_string(devices.size()) + " devices; devplace handles at most " +
                std::to_string(kMaxDevices));
  }
  const int32_t n = num_devices();
  if (!IsValidUtf8(name)) throw Error(where + "the cluster's name '" + ForMessage(name) + "' is not valid UTF-8");
  CheckDevices(where);
  CheckLinks(where);

  // Routes: fewest hops, then the widest bottleneck; among routes still
  // equal, the one whose last intermediate device comes first in the device
  // list, then the one before it, and so on (docs/simulator.md). The rule
  // names devices, not the order links are listed in, so reordering a
  // cluster file's links changes no route.
  const int32_t num_link_channels = static_cast<int32_t>(2 * links.size());
  auto make_hop = [&](int32_t link_index, int32_t from) {
    const Link& link = links[link_index];
    bool forward = (from == link.a);
    int32_t direction = forward ? 0 : 1;
    int32_t channel = link.bus >= 0 ? num_link_channels + 2 * link.bus + direction : 2 * link_index + direction;
    return Hop{link_index, from, forward ? link.b : link.a, channel};
  };
  hops_.clear();
  route_offsets_.assign(static_cast<size_t>(n) * n, {0, 0});
  // Links at each device, by the device at their other end.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> neighbours(n);  // (device, link)
  for (int32_t l = 0; l < static_cast<int32_t>(links.size()); ++l) {
    neighbours[links[l].a].push_back({links[l].b, l});
    neighbours[links[l].b].push_back({links[l].a, l});
  }
  for (auto& list : neighbours) std::sort(list.begin(), list.end());
  for (int32_t src = 0; src < n; ++src) {
    const int kUnreached = std::numeric_limits<int>::max();
    std::vector<int> hops(n, kUnreached);
    std::vector<double> bottleneck(n, 0);  // widest over the fewest-hop routes
    hops[src] = 0;
    bottleneck[src] = std::numeric_limits<double>::infinity();
    // Breadth first: the devices k hops away get their widest bottleneck
    // from those k - 1 hops away.
    std::vector<int32_t> layer = {src};
    while (!layer.empty()) {
      std::vector<int32_t> next;
      for (int32_t from : layer) {
        for (auto [to, l] : neighbours[from]) {
          if (hops[to] == kUnreached) {
            hops[to] = hops[from] + 1;
            next.push_back(to);
          }
          if (hops[to] == hops[from] + 1) {
            bottleneck[to] = std::max(bottleneck[to], std::min(bottleneck[from], links[l].bandwidth_bytes_per_s));
          }
        }
      }
      layer = std::move(next);
    }
    for (int32_t dst = 0; dst < n; ++dst) {
      if (hops[dst] == kUnreached) {
        throw Error(where + "device '" + ForMessage(devices[dst].name) + "' cannot be reached from '" +
                    ForMessage(devices[src].name) + "'");
      }
      // Backwards from dst: each hop from the first device (by index) one
      // hop closer from which a route at least as wide as dst's bottleneck
      // goes on. The bar is dst's bottleneck, not the intermediate
      // device's own widest: routes to dst that tie may reach it through
      // narrower prefixes than the widest route to that device.
      const double bar = bottleneck[dst];
      std::vector<Hop> path;
      for (int32_t at = dst; at != src;) {
        int32_t via = -1;
        for (auto [from, l] : neighbours[at]) {
          if (hops[from] + 1 == hops[at] && std::min(bottleneck[from], links[l].bandwidth_bytes_per_s) >= bar) {
            via = l;
            break;
          }
        }
        const int32_t from = links[via].a == at ? links[via].b : links[via].a;
        path.push_back(make_hop(via, from));
        at = from;
      }
      std::reverse(path.begin(), path.end());
      int32_t begin = static_cast<int32_t>(hops_.size());
      hops_.insert(hops_.end(), path.begin(), path.end());
      route_offsets_[src * n + dst] = {begin, static_cast<int32_t>(hops_.size())};
    }
  }
}

}  // namespace devplace
