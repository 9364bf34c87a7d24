#include "cost/op_time_table.h"

#include "util/error.h"
#include "util/files.h"

namespace devplace {

void OpTimeTable::Add(const std::string& op_type, const std::vector<int64_t>& shape, DeviceKind kind, double time_us) {
  times_us_[{op_type, shape, kind}] = time_us;
}

std::optional<double> OpTimeTable::Find(const Op& op, DeviceKind kind) const {
  if (times_us_.empty()) return std::nullopt;
  static const std::vector<int64_t> kScalar;
  const std::vector<int64_t>& shape = op.outputs.empty() ? kScalar : op.outputs.front().shape;
  auto it = times_us_.find({op.type, shape, kind});
  if (it == times_us_.end()) return std::nullopt;
  return it->second;
}

OpTimeTable OpTimeTable::Load(const std::string& path) {
  nlohmann::json document = ReadJsonFile(path);
  if (!document.is_object() || !document.contains("times") || !document["times"].is_array()) {
    throw Error(path + ": expected an object with a 'times' array");
  }
  OpTimeTable table;
  const auto& times = document["times"];
  for (size_t i = 0; i < times.size(); ++i) {
    const auto& entry = times[i];
    std::string where = path + ": times[" + std::to_string(i) + "]: ";
    if (!entry.is_object()) throw Error(where + "must be an object");
    if (!entry.contains("op_type") || !entry["op_type"].is_string()) throw Error(where + "missing 'op_type'");
    if (!entry.contains("device_kind") || !entry["device_kind"].is_string()) throw Error(where + "missing 'device_kind'");
    if (!entry.contains("time_us") || !entry["time_us"].is_number()) throw Error(where + "missing 'time_us'");
    auto kind = ParseDeviceKind(entry["device_kind"].get<std::string>());
    if (!kind) throw Error(where + "unknown device kind '" + entry["device_kind"].get<std::string>() + "'");
    double time_us = entry["time_us"].get<double>();
    if (time_us < 0) throw Error(where + "negative 'time_us'");
    std::vector<int64_t> shape;
    if (entry.contains("shape")) {
      if (!entry["shape"].is_array()) throw Error(where + "'shape' must be an array of integers");
      for (const auto& d : entry["shape"]) {
        if (!d.is_number_integer()) throw Error(where + "'shape' must be an array of integers");
        shape.push_back(d.get<int64_t>());
      }
    }
    table.Add(entry["op_type"].get<std::string>(), shape, *kind, time_us);
  }
  return table;
}

}  // namespace devplace
