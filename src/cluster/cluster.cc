#include "cluster/cluster.h"

#include <algorithm>
#include <limits>
#include <set>

#include "util/error.h"

namespace devplace {

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

void Cluster::Finalize(const std::string& source) {
  const std::string where = source + ": ";
  const int32_t n = num_devices();
  if (n == 0) throw Error(where + "the cluster has no devices");
  // The simulator tracks a tensor's destinations in a 64-bit mask.
  if (n > 64) throw Error(where + "the cluster has " + std::to_string(n) + " devices; devplace handles at most 64");

  std::set<std::string> names;
  for (const Device& d : devices) {
    std::string what = where + "device '" + d.name + "': ";
    if (d.name.empty()) throw Error(where + "a device has an empty name");
    if (!names.insert(d.name).second) throw Error(where + "duplicate device name '" + d.name + "'");
    if (!(d.peak_flops_per_s > 0)) throw Error(what + "peak FLOP/s must be positive");
    if (!(d.memory_bandwidth_bytes_per_s > 0)) throw Error(what + "memory bandwidth must be positive");
    if (d.memory_bytes <= 0) throw Error(what + "memory capacity must be positive");
    if (d.reserved_bytes < 0 || d.reserved_bytes >= d.memory_bytes) {
      throw Error(what + "reserved memory must be at least 0 and less than the capacity");
    }
    if (d.launch_overhead_us < 0) throw Error(what + "launch overhead must not be negative");
    if (d.parallel_ops < 1) throw Error(what + "parallel_ops must be at least 1");
  }
  std::set<std::pair<int32_t, int32_t>> linked;
  for (const Link& link : links) {
    if (link.a < 0 || link.a >= n || link.b < 0 || link.b >= n) throw Error(where + "a link joins a missing device");
    std::string what = where + "link " + devices[link.a].name + " - " + devices[link.b].name + ": ";
    if (link.a == link.b) throw Error(what + "joins a device to itself");
    if (!linked.insert(std::minmax(link.a, link.b)).second) throw Error(what + "duplicate link");
    if (!(link.bandwidth_bytes_per_s > 0)) throw Error(what + "bandwidth must be positive");
    if (link.latency_us < 0) throw Error(what + "latency must not be negative");
    if (link.bus < -1 || link.bus >= static_cast<int32_t>(buses.size())) throw Error(what + "refers to a missing bus");
  }

  // Routes. With a dozen devices, a Bellman-Ford over (hops, -bottleneck)
  // from every source is instant.
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
  for (int32_t src = 0; src < n; ++src) {
    const int kUnreached = std::numeric_limits<int>::max();
    std::vector<int> hops(n, kUnreached);
    std::vector<double> bottleneck(n, 0);
    std::vector<int32_t> via_link(n, -1);
    hops[src] = 0;
    bottleneck[src] = std::numeric_limits<double>::infinity();
    for (int round = 0; round < n; ++round) {
      bool changed = false;
      for (int32_t l = 0; l < static_cast<int32_t>(links.size()); ++l) {
        for (int side = 0; side < 2; ++side) {
          int32_t from = side == 0 ? links[l].a : links[l].b;
          int32_t to = side == 0 ? links[l].b : links[l].a;
          if (hops[from] == kUnreached) continue;
          int candidate_hops = hops[from] + 1;
          double candidate_width = std::min(bottleneck[from], links[l].bandwidth_bytes_per_s);
          if (candidate_hops < hops[to] || (candidate_hops == hops[to] && candidate_width > bottleneck[to])) {
            hops[to] = candidate_hops;
            bottleneck[to] = candidate_width;
            via_link[to] = l;
            changed = true;
          }
        }
      }
      if (!changed) break;
    }
    for (int32_t dst = 0; dst < n; ++dst) {
      if (hops[dst] == kUnreached) {
        throw Error(where + "device '" + devices[dst].name + "' cannot be reached from '" + devices[src].name + "'");
      }
      std::vector<Hop> path;
      for (int32_t at = dst; at != src;) {
        int32_t l = via_link[at];
        int32_t from = links[l].a == at ? links[l].b : links[l].a;
        path.push_back(make_hop(l, from));
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
