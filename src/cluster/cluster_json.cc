#include "cluster/cluster_json.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <system_error>

#include "cluster/presets.h"
#include "util/error.h"
#include "util/files.h"
#include "util/json_fields.h"

namespace devplace {
namespace {

using nlohmann::json;

constexpr double kBytesPerGib = 1073741824.0;
// The largest double below 2^63, so that converting it to int64 is defined.
constexpr double kMaxBytesAsDouble = 9223372036854774784.0;

// A capacity in GiB as bytes; a value that does not fit in int64 is an error.
int64_t GibAsBytes(const JsonFields& r, const char* field, Sign sign) {
  const double bytes = r.Number(field, sign) * kBytesPerGib;
  if (bytes > kMaxBytesAsDouble) r.Fail(std::string("field '") + field + "' is more bytes than fit in 64 bits");
  return static_cast<int64_t>(bytes);
}

// Either `bytes_field` (an integer) or `gib_field` (a number of GiB).
int64_t ReadBytes(const JsonFields& r, const char* bytes_field, const char* gib_field, bool required) {
  const Sign sign = required ? Sign::kPositive : Sign::kNonNegative;
  if (r.Has(bytes_field)) return r.Integer(bytes_field, IntRange{required ? 1 : 0, std::numeric_limits<int64_t>::max()});
  if (r.Has(gib_field)) return GibAsBytes(r, gib_field, sign);
  if (required) r.Fail(std::string("missing required field '") + bytes_field + "' (or '" + gib_field + "')");
  return 0;
}

Device ReadDevice(const json& node, const std::string& source, size_t index) {
  JsonFields unnamed(node, source + ": devices[" + std::to_string(index) + "]");
  if (!node.is_object()) unnamed.Fail("must be an object, not " + DescribeJsonValue(node));
  Device d;
  d.name = unnamed.String("name");
  JsonFields r(node, source + ": device '" + ForMessage(d.name) + "'");
  std::string kind = r.String("kind");
  auto parsed = ParseDeviceKind(kind);
  if (!parsed) r.Fail("unknown kind '" + ForMessage(kind) + "' (expected cpu or gpu)");
  d.kind = *parsed;
  // Finalize rejects the products that overflow to infinity.
  d.peak_flops_per_s = r.Number("peak_tflops", Sign::kPositive) * 1e12;
  d.memory_bandwidth_bytes_per_s = r.Number("memory_bandwidth_gb_per_s", Sign::kPositive) * 1e9;
  d.memory_bytes = ReadBytes(r, "memory_bytes", "memory_gib", /*required=*/true);
  d.reserved_bytes = ReadBytes(r, "reserved_bytes", "reserved_gib", /*required=*/false);
  d.launch_overhead_us = r.Number("launch_overhead_us", 0, Sign::kNonNegative);
  d.parallel_ops = static_cast<int32_t>(r.Integer("parallel_ops", 1, IntRange{1, kMaxParallelOps}));
  d.wake_up_us = r.Number("wake_up_us", 0, Sign::kNonNegative);
  d.wake_up_after_idle_us = r.Number("wake_up_after_idle_us", 0, Sign::kNonNegative);
  // Optional: where the device is on this machine (clusters --detect).
  const json& cores = r.Array("cores");
  if (cores.size() > static_cast<size_t>(kMaxCores)) r.Fail("field 'cores' lists more than " + std::to_string(kMaxCores));
  for (const json& core : cores) {
    auto value = IntegerIn(core, IntRange{0, kMaxCores - 1});
    if (!value) r.Fail("field 'cores' must hold core numbers 0.." + std::to_string(kMaxCores - 1) + ", not " + DescribeJsonValue(core));
    d.cores.push_back(static_cast<int32_t>(*value));
  }
  d.cuda_index = static_cast<int32_t>(r.Integer("cuda_index", -1, IntRange{0, kMaxDevices - 1}));
  return d;
}

Link ReadLink(const json& node, const Cluster& cluster, const std::string& source, size_t index) {
  JsonFields r(node, source + ": links[" + std::to_string(index) + "]");
  if (!node.is_object()) r.Fail("must be an object, not " + DescribeJsonValue(node));
  const json& between = r.RequiredArray("between");
  if (between.size() != 2 || !between[0].is_string() || !between[1].is_string()) {
    r.Fail("field 'between' must name two devices");
  }
  Link link;
  for (int side = 0; side < 2; ++side) {
    const std::string& device_name = between[side].get_ref<const std::string&>();
    int32_t d = cluster.FindDevice(device_name);
    if (d < 0) r.Fail("unknown device '" + ForMessage(device_name) + "'");
    (side == 0 ? link.a : link.b) = d;
  }
  link.bandwidth_bytes_per_s = r.Number("bandwidth_gb_per_s", Sign::kPositive) * 1e9;
  link.latency_us = r.Number("latency_us", 0, Sign::kNonNegative);
  if (r.Has("bus")) {
    std::string bus = r.String("bus");
    auto it = std::find(cluster.buses.begin(), cluster.buses.end(), bus);
    if (it == cluster.buses.end()) r.Fail("unknown bus '" + ForMessage(bus) + "' (declare it under 'buses')");
    link.bus = static_cast<int32_t>(it - cluster.buses.begin());
  }
  return link;
}

Cluster ReadCluster(const json& document, const std::string& raw_source) {
  const std::string source = ForMessage(raw_source);
  JsonFields top(document, source);
  if (!document.is_object()) top.Fail("expected a JSON object with 'version' and 'devices'");
  int64_t version = top.Integer("version");
  if (version < 1 || version > kClusterFormatVersion) {
    top.Fail("unsupported cluster format version " + std::to_string(version));
  }
  Cluster cluster;
  // The file name's stem may hold any bytes; a name must be UTF-8.
  cluster.name = top.String("name", ForMessage(std::filesystem::path(raw_source).stem().string()));

  const json& devices = top.RequiredArray("devices");
  // Finalize says the same; stopping here keeps a huge list from being read.
  if (devices.size() > static_cast<size_t>(kMaxDevices)) {
    top.Fail("the cluster has " + std::to_string(devices.size()) + " devices; devplace handles at most " +
             std::to_string(kMaxDevices));
  }
  for (size_t i = 0; i < devices.size(); ++i) cluster.devices.push_back(ReadDevice(devices[i], source, i));

  for (const json& bus : top.Array("buses")) {
    if (!bus.is_string()) top.Fail("field 'buses' must be an array of names, not hold " + DescribeJsonValue(bus));
    cluster.buses.push_back(bus.get<std::string>());
  }
  const json& links = top.Array("links");
  for (size_t i = 0; i < links.size(); ++i) cluster.links.push_back(ReadLink(links[i], cluster, source, i));
  return cluster;
}

}  // namespace

Cluster ClusterFromJson(const json& document, const std::string& source) {
  Cluster cluster;
  try {
    cluster = ReadCluster(document, source);
  } catch (const nlohmann::json::exception& e) {
    // The checked readers should leave nothing for nlohmann to throw; if one
    // slips through, it still names the input.
    throw Error(ForMessage(source) + ": unexpected JSON content (" + ForMessage(e.what()) + ")");
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
    if (d.wake_up_us > 0) {
      devices.back()["wake_up_us"] = d.wake_up_us;
      devices.back()["wake_up_after_idle_us"] = d.wake_up_after_idle_us;
    }
    if (!d.cores.empty()) devices.back()["cores"] = d.cores;
    if (d.cuda_index >= 0) devices.back()["cuda_index"] = d.cuda_index;
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
  // The error_code form: a path the system cannot even look up (too long)
  // falls through to the reader, whose error says why.
  std::error_code error;
  if (!std::filesystem::exists(preset_or_path, error) && !error) {
    std::string names;
    for (const auto& info : ListClusterPresets()) names += (names.empty() ? "" : ", ") + info.name;
    throw Error("cluster '" + ForMessage(preset_or_path) + "' is neither a preset (" + names + ") nor a file");
  }
  return LoadClusterFile(preset_or_path);
}

}  // namespace devplace
