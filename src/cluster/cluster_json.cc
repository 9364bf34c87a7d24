#include "cluster/cluster_json.h"

#include <filesystem>

#include "cluster/presets.h"
#include "util/error.h"
#include "util/files.h"

namespace devplace {
namespace {

using nlohmann::json;

[[noreturn]] void Fail(const std::string& where, const std::string& problem) { throw Error(where + ": " + problem); }

double PositiveNumber(const json& node, const char* field, const std::string& where, bool required,
                      double fallback = 0) {
  if (!node.contains(field)) {
    if (required) Fail(where, std::string("missing required field '") + field + "'");
    return fallback;
  }
  if (!node[field].is_number()) Fail(where, std::string("field '") + field + "' must be a number");
  double value = node[field].get<double>();
  if (value < 0) Fail(where, std::string("field '") + field + "' must not be negative");
  return value;
}

std::string RequiredString(const json& node, const char* field, const std::string& where) {
  if (!node.contains(field)) Fail(where, std::string("missing required field '") + field + "'");
  if (!node[field].is_string()) Fail(where, std::string("field '") + field + "' must be a string");
  return node[field].get<std::string>();
}

}  // namespace

Cluster ClusterFromJson(const json& document, const std::string& source) {
  if (!document.is_object()) Fail(source, "expected a JSON object with 'version' and 'devices'");
  if (!document.contains("version") || !document["version"].is_number_integer()) {
    Fail(source, "missing required field 'version' (an integer)");
  }
  int64_t version = document["version"].get<int64_t>();
  if (version < 1 || version > kClusterFormatVersion) {
    Fail(source, "unsupported cluster format version " + std::to_string(version));
  }
  Cluster cluster;
  cluster.name = document.value("name", std::filesystem::path(source).stem().string());

  if (!document.contains("devices") || !document["devices"].is_array()) {
    Fail(source, "missing required field 'devices' (an array)");
  }
  for (size_t i = 0; i < document["devices"].size(); ++i) {
    const json& node = document["devices"][i];
    std::string where = source + ": devices[" + std::to_string(i) + "]";
    if (!node.is_object()) Fail(where, "must be an object");
    Device d;
    d.name = RequiredString(node, "name", where);
    where = source + ": device '" + d.name + "'";
    std::string kind = RequiredString(node, "kind", where);
    auto parsed = ParseDeviceKind(kind);
    if (!parsed) Fail(where, "unknown kind '" + kind + "' (expected cpu or gpu)");
    d.kind = *parsed;
    d.peak_flops_per_s = PositiveNumber(node, "peak_tflops", where, true) * 1e12;
    d.memory_bandwidth_bytes_per_s = PositiveNumber(node, "memory_bandwidth_gb_per_s", where, true) * 1e9;
    if (node.contains("memory_bytes")) {
      if (!node["memory_bytes"].is_number_integer()) Fail(where, "field 'memory_bytes' must be an integer");
      d.memory_bytes = node["memory_bytes"].get<int64_t>();
    } else if (node.contains("memory_gib")) {
      d.memory_bytes = static_cast<int64_t>(PositiveNumber(node, "memory_gib", where, true) * 1073741824.0);
    } else {
      Fail(where, "missing required field 'memory_bytes' (or 'memory_gib')");
    }
    if (node.contains("reserved_bytes")) {
      if (!node["reserved_bytes"].is_number_integer()) Fail(where, "field 'reserved_bytes' must be an integer");
      d.reserved_bytes = node["reserved_bytes"].get<int64_t>();
    } else if (node.contains("reserved_gib")) {
      d.reserved_bytes = static_cast<int64_t>(PositiveNumber(node, "reserved_gib", where, false, 0) * 1073741824.0);
    }
    d.launch_overhead_us = PositiveNumber(node, "launch_overhead_us", where, false, 0);
    if (node.contains("parallel_ops")) {
      if (!node["parallel_ops"].is_number_integer()) Fail(where, "field 'parallel_ops' must be an integer");
      d.parallel_ops = node["parallel_ops"].get<int32_t>();
    }
    cluster.devices.push_back(std::move(d));
  }

  if (document.contains("buses")) {
    if (!document["buses"].is_array()) Fail(source, "field 'buses' must be an array of names");
    for (const json& bus : document["buses"]) {
      if (!bus.is_string()) Fail(source, "field 'buses' must be an array of names");
      cluster.buses.push_back(bus.get<std::string>());
    }
  }

  if (document.contains("links")) {
    if (!document["links"].is_array()) Fail(source, "field 'links' must be an array");
    for (size_t i = 0; i < document["links"].size(); ++i) {
      const json& node = document["links"][i];
      std::string where = source + ": links[" + std::to_string(i) + "]";
      if (!node.is_object()) Fail(where, "must be an object");
      if (!node.contains("between") || !node["between"].is_array() || node["between"].size() != 2 ||
          !node["between"][0].is_string() || !node["between"][1].is_string()) {
        Fail(where, "field 'between' must name two devices");
      }
      Link link;
      for (int side = 0; side < 2; ++side) {
        std::string device_name = node["between"][side].get<std::string>();
        int32_t d = cluster.FindDevice(device_name);
        if (d < 0) Fail(where, "unknown device '" + device_name + "'");
        (side == 0 ? link.a : link.b) = d;
      }
      link.bandwidth_bytes_per_s = PositiveNumber(node, "bandwidth_gb_per_s", where, true) * 1e9;
      link.latency_us = PositiveNumber(node, "latency_us", where, false, 0);
      if (node.contains("bus")) {
        if (!node["bus"].is_string()) Fail(where, "field 'bus' must be a string");
        std::string bus = node["bus"].get<std::string>();
        auto it = std::find(cluster.buses.begin(), cluster.buses.end(), bus);
        if (it == cluster.buses.end()) Fail(where, "unknown bus '" + bus + "' (declare it under 'buses')");
        link.bus = static_cast<int32_t>(it - cluster.buses.begin());
      }
      cluster.links.push_back(link);
    }
  }
  cluster.Finalize(source);
  return cluster;
}

Cluster LoadClusterFile(const std::string& path) { return ClusterFromJson(ReadJsonFile(path), path); }

json ClusterToJson(const Cluster& cluster) {
  json devices = json::array();
  for (const Device& d : cluster.devices) {
    devices.push_back({{"name", d.name},
                       {"kind", DeviceKindName(d.kind)},
                       {"peak_tflops", d.peak_flops_per_s / 1e12},
                       {"memory_bandwidth_gb_per_s", d.memory_bandwidth_bytes_per_s / 1e9},
                       {"memory_bytes", d.memory_bytes},
                       {"reserved_bytes", d.reserved_bytes},
                       {"launch_overhead_us", d.launch_overhead_us},
                       {"parallel_ops", d.parallel_ops}});
  }
  json links = json::array();
  for (const Link& l : cluster.links) {
    json node = {{"between", {cluster.devices[l.a].name, cluster.devices[l.b].name}},
                 {"bandwidth_gb_per_s", l.bandwidth_bytes_per_s / 1e9},
                 {"latency_us", l.latency_us}};
    if (l.bus >= 0) node["bus"] = cluster.buses[l.bus];
    links.push_back(std::move(node));
  }
  return {{"format", "devplace-cluster"}, {"version", kClusterFormatVersion}, {"name", cluster.name},
          {"devices", std::move(devices)}, {"buses", cluster.buses},          {"links", std::move(links)}};
}

Cluster ResolveCluster(const std::string& preset_or_path) {
  if (auto preset = MakeClusterPreset(preset_or_path)) return *preset;
  if (!std::filesystem::exists(preset_or_path)) {
    std::string names;
    for (const auto& info : ListClusterPresets()) names += (names.empty() ? "" : ", ") + info.name;
    throw Error("cluster '" + preset_or_path + "' is neither a preset (" + names + ") nor a file");
  }
  return LoadClusterFile(preset_or_path);
}

}  // namespace devplace
