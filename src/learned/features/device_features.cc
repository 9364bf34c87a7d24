#include "learned/features/device_features.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "util/error.h"

namespace devplace {
namespace {

// What one device's row is computed from: the device, the cluster's
// extremes, and its routes to the others.
struct DeviceContext {
  const Cluster& cluster;
  double fastest_flops = 0;
  double total_flops = 0;
  double widest_memory_bandwidth = 0;
  double memory_need_bytes = 1;
  // Per device: mean and min route bandwidth and mean latency to the others
  // (its own memory bandwidth and 0 on a one-device cluster).
  std::vector<double> mean_bandwidth, min_bandwidth, mean_latency_us;
  std::vector<double> bus_share;  // share of the other devices it shares a bus with
};

double RouteBandwidth(const Cluster& c, int32_t from, int32_t to) {
  double bottleneck = std::numeric_limits<double>::infinity();
  for (const Hop& hop : c.Route(from, to)) bottleneck = std::min(bottleneck, c.links[hop.link].bandwidth_bytes_per_s);
  return std::isfinite(bottleneck) ? bottleneck : c.devices[from].memory_bandwidth_bytes_per_s;
}

double RouteLatencyUs(const Cluster& c, int32_t from, int32_t to) {
  double sum = 0;
  for (const Hop& hop : c.Route(from, to)) sum += c.links[hop.link].latency_us;
  return sum;
}

// log10 of a bandwidth in GB/s over 3: PCIe-like links about 0.4, NVLink-like 0.7.
float LogBandwidth(double bytes_per_s) { return static_cast<float>(std::log10(std::max(1.0, bytes_per_s / 1e9)) / 3); }
float LogLatency(double us) { return static_cast<float>(std::log1p(std::max(0.0, us)) / 5); }

using Feature = std::function<float(const DeviceContext&, int32_t)>;

const std::vector<std::pair<std::string, Feature>>& Features() {
  static const std::vector<std::pair<std::string, Feature>> features = [] {
    std::vector<std::pair<std::string, Feature>> f;
    for (int k = 0; k < kNumDeviceKinds; ++k) {
      f.emplace_back(std::string("kind_") + DeviceKindName(static_cast<DeviceKind>(k)),
                     [k](const DeviceContext& c, int32_t d) { return static_cast<int>(c.cluster.devices[d].kind) == k ? 1.0f : 0.0f; });
    }
    f.emplace_back("peak_flops_vs_fastest", [](const DeviceContext& c, int32_t d) {
      return static_cast<float>(c.cluster.devices[d].peak_flops_per_s / c.fastest_flops);
    });
    f.emplace_back("log_peak_flops_vs_fastest", [](const DeviceContext& c, int32_t d) {
      return static_cast<float>(std::max(-10.0, std::log(c.cluster.devices[d].peak_flops_per_s / c.fastest_flops)) / 5);
    });
    f.emplace_back("share_of_cluster_flops", [](const DeviceContext& c, int32_t d) {
      return static_cast<float>(c.cluster.devices[d].peak_flops_per_s / c.total_flops);
    });
    f.emplace_back("log_memory_bandwidth_vs_widest", [](const DeviceContext& c, int32_t d) {
      return static_cast<float>(std::max(-10.0, std::log(c.cluster.devices[d].memory_bandwidth_bytes_per_s / c.widest_memory_bandwidth)) / 5);
    });
    f.emplace_back("memory_vs_graph_need", [](const DeviceContext& c, int32_t d) {
      return static_cast<float>(std::min(1.0, std::max(0.0, static_cast<double>(c.cluster.devices[d].usable_memory_bytes())) / c.memory_need_bytes));
    });
    f.emplace_back("log_memory_vs_graph_need", [](const DeviceContext& c, int32_t d) {
      const double usable = std::max(1.0, static_cast<double>(c.cluster.devices[d].usable_memory_bytes()));
      return static_cast<float>(std::clamp(std::log(usable / c.memory_need_bytes), -10.0, 10.0) / 5);
    });
    f.emplace_back("log_launch_overhead", [](const DeviceContext& c, int32_t d) { return LogLatency(c.cluster.devices[d].launch_overhead_us); });
    f.emplace_back("log_mean_link_bandwidth", [](const DeviceContext& c, int32_t d) { return LogBandwidth(c.mean_bandwidth[d]); });
    f.emplace_back("log_min_link_bandwidth", [](const DeviceContext& c, int32_t d) { return LogBandwidth(c.min_bandwidth[d]); });
    f.emplace_back("log_mean_link_latency", [](const DeviceContext& c, int32_t d) { return LogLatency(c.mean_latency_us[d]); });
    f.emplace_back("shared_bus_share", [](const DeviceContext& c, int32_t d) { return static_cast<float>(c.bus_share[d]); });
    f.emplace_back("devices_over_16", [](const DeviceContext& c, int32_t) { return static_cast<float>(c.cluster.num_devices()) / 16; });
    return f;
  }();
  return features;
}

}  // namespace

double GraphMemoryNeedBytes(const Graph& graph) {
  double bytes = 0;
  for (const Op& op : graph.ops()) {
    bytes += static_cast<double>(op.persistent_bytes);
    for (const TensorSpec& t : op.outputs) {
      if (!t.aliases_persistent) bytes += static_cast<double>(t.bytes);
    }
  }
  return std::max(1.0, bytes);
}

const std::vector<std::string>& KnownDeviceFeatures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& [name, f] : Features()) n.push_back(name);
    return n;
  }();
  return names;
}

DeviceFeatures BuildDeviceFeatures(const Cluster& cluster, const Graph& graph, const std::vector<std::string>& names) {
  std::map<std::string, const Feature*> by_name;
  for (const auto& [name, f] : Features()) by_name.emplace(name, &f);
  std::vector<const Feature*> chosen;
  for (const std::string& name : names) {
    auto it = by_name.find(name);
    if (it == by_name.end()) throw Error("device feature '" + ForMessage(name) + "' is not one this devplace computes");
    chosen.push_back(it->second);
  }
  const int32_t D = cluster.num_devices();
  if (D == 0) throw Error("cluster '" + ForMessage(cluster.name) + "' has no devices");
  DeviceContext c{cluster};
  c.memory_need_bytes = GraphMemoryNeedBytes(graph);
  for (const Device& d : cluster.devices) {
    c.fastest_flops = std::max(c.fastest_flops, d.peak_flops_per_s);
    c.total_flops += d.peak_flops_per_s;
    c.widest_memory_bandwidth = std::max(c.widest_memory_bandwidth, d.memory_bandwidth_bytes_per_s);
  }
  std::vector<std::vector<int32_t>> buses_of(D);
  for (const Link& link : cluster.links) {
    if (link.bus < 0) continue;
    buses_of[link.a].push_back(link.bus);
    buses_of[link.b].push_back(link.bus);
  }
  DeviceFeatures out;
  out.num_devices = D;
  out.names = names;
  out.pairs.assign(static_cast<size_t>(D) * D * kDevicePairFeatures, 0.0f);
  for (int32_t d = 0; d < D; ++d) {
    double sum_bw = 0, min_bw = std::numeric_limits<double>::infinity(), sum_lat = 0;
    int32_t sharing = 0;
    for (int32_t e = 0; e < D; ++e) {
      float* pair = &out.pairs[(static_cast<size_t>(d) * D + e) * kDevicePairFeatures];
      if (e == d) {
        pair[2] = 1;
        continue;
      }
      const double bw = RouteBandwidth(cluster, d, e), lat = RouteLatencyUs(cluster, d, e);
      pair[0] = LogBandwidth(bw);
      pair[1] = LogLatency(lat);
      sum_bw += bw;
      min_bw = std::min(min_bw, bw);
      sum_lat += lat;
      const bool shares = std::any_of(buses_of[d].begin(), buses_of[d].end(), [&](int32_t bus) {
        return std::find(buses_of[e].begin(), buses_of[e].end(), bus) != buses_of[e].end();
      });
      if (shares) ++sharing;
    }
    const bool alone = D == 1;
    c.mean_bandwidth.push_back(alone ? cluster.devices[d].memory_bandwidth_bytes_per_s : sum_bw / (D - 1));
    c.min_bandwidth.push_back(alone ? cluster.devices[d].memory_bandwidth_bytes_per_s : min_bw);
    c.mean_latency_us.push_back(alone ? 0 : sum_lat / (D - 1));
    c.bus_share.push_back(alone ? 0 : static_cast<double>(sharing) / (D - 1));
  }
  out.values.reserve(static_cast<size_t>(D) * chosen.size());
  for (int32_t d = 0; d < D; ++d) {
    for (const Feature* f : chosen) {
      const float v = (*f)(c, d);
      out.values.push_back(std::isfinite(v) ? v : 0.0f);
    }
  }
  return out;
}

}  // namespace devplace
