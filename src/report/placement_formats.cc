#include "report/placement_formats.h"

#include <nlohmann/json.hpp>

#include "report/device_map.h"
#include "util/error.h"

namespace devplace {
namespace {

struct FormatInfo {
  PlacementFormat format;
  const char* name;
  const char* extension;  // what a file name ends with, most specific first
};

// Longer extensions first: "x.tf.json" is a TensorFlow file, not devplace's.
constexpr FormatInfo kFormats[] = {
    {PlacementFormat::kDeviceMap, "device_map", ".device_map.json"},
    {PlacementFormat::kTensorflow, "tf", ".tf.json"},
    {PlacementFormat::kCsv, "csv", ".csv"},
    {PlacementFormat::kDevplace, "devplace", ".json"},
};

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// RFC 4180: quote a cell holding a comma, a quote or a line break.
std::string CsvCell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

const char* PlacementFormatName(PlacementFormat format) {
  for (const FormatInfo& f : kFormats) {
    if (f.format == format) return f.name;
  }
  return "?";
}

std::optional<PlacementFormat> ParsePlacementFormat(std::string_view name) {
  for (const FormatInfo& f : kFormats) {
    if (name == f.name) return f.format;
  }
  return std::nullopt;
}

std::string PlacementFormatNames() {
  // In the order people reach for them, devplace's own first.
  return "devplace, csv, tf, device_map";
}

PlacementFormat PlacementFormatForPath(const std::string& path) {
  for (const FormatInfo& f : kFormats) {
    if (EndsWith(path, f.extension)) return f.format;
  }
  throw Error("output '" + path +
              "': cannot tell the format from the name (.json, .csv, .tf.json, .device_map.json); give --format");
}

std::string TensorflowDeviceString(const Cluster& cluster, int32_t device) {
  const DeviceKind kind = cluster.devices[device].kind;
  int32_t index = 0;
  for (int32_t d = 0; d < device; ++d) index += cluster.devices[d].kind == kind;
  return std::string("/device:") + (kind == DeviceKind::kCpu ? "CPU" : "GPU") + ":" + std::to_string(index);
}

std::string FormatPlacement(PlacementFormat format, const Graph& graph, const Cluster& cluster,
                            const Placement& placement) {
  switch (format) {
    case PlacementFormat::kDevplace:
      return PlacementToJson(graph, cluster, placement).dump(1) + "\n";
    case PlacementFormat::kCsv: {
      std::string out = "op,device\n";
      for (int32_t op = 0; op < graph.num_ops(); ++op) {
        out += CsvCell(graph.op(op).name) + "," + CsvCell(cluster.devices[placement[op]].name) + "\n";
      }
      return out;
    }
    case PlacementFormat::kTensorflow: {
      // Ops in graph order, so the file reads like the graph.
      nlohmann::ordered_json devices = nlohmann::ordered_json::object();
      for (int32_t op = 0; op < graph.num_ops(); ++op) {
        devices[graph.op(op).name] = TensorflowDeviceString(cluster, placement[op]);
      }
      return devices.dump(1) + "\n";
    }
    case PlacementFormat::kDeviceMap:
      return DeviceMapJson(graph, cluster, placement).dump(1) + "\n";
  }
  return "";
}

}  // namespace devplace
