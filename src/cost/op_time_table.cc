#include "cost/op_time_table.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "util/error.h"
#include "util/files.h"
#include "util/json_fields.h"

namespace devplace {
namespace {

const std::vector<int64_t>& FirstOutputShape(const Op& op) {
  static const std::vector<int64_t> kScalar;
  return op.outputs.empty() ? kScalar : op.outputs.front().shape;
}

// A shape for a message, cut after a few dimensions so that a hostile
// thousand-dimension shape still gives a short line.
std::string FormatShape(const std::vector<int64_t>& shape) {
  constexpr size_t kMaxDims = 8;
  std::string text = "[";
  for (size_t i = 0; i < shape.size() && i < kMaxDims; ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() > kMaxDims) text += ", ... (" + std::to_string(shape.size()) + " dims)";
  return text + "]";
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Whether `a` is a likely misspelling of `b`: equal but for case, or within
// two single-character edits.
bool IsClose(const std::string& a, const std::string& b) {
  constexpr size_t kMaxEdits = 2;
  const size_t diff = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (diff > kMaxEdits) return false;  // also keeps long hostile names cheap
  if (Lower(a) == Lower(b)) return true;
  // Levenshtein distance, one row at a time.
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    size_t best = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
      best = std::min(best, row[j]);
    }
    if (best > kMaxEdits) return false;
  }
  return row[b.size()] <= kMaxEdits;
}

std::string JoinQuoted(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "'" : ", '") + ForMessage(name, 60) + "'";
  return text;
}

// Keys an entry may have; anything else is a typo that would otherwise be
// ignored (a misspelt "shape" would make the entry match scalars only).
bool IsEntryKey(const std::string& key) {
  return key == "op_type" || key == "shape" || key == "device_kind" || key == "time_us" || key == "flops" ||
         key == "device";
}

OpTimeEntry ReadEntry(const nlohmann::json& node, size_t index, const std::string& where) {
  JsonFields fields(node, where);
  if (!node.is_object()) fields.Fail("must be an object, not " + DescribeJsonValue(node));
  for (const auto& [key, value] : node.items()) {
    if (!IsEntryKey(key)) {
      fields.Fail("unknown field '" + ForMessage(key, 60) +
                  "' (an entry has op_type, shape, device_kind, time_us, and may have flops and device)");
    }
  }
  OpTimeEntry entry;
  entry.index = index;
  entry.op_type = fields.String("op_type");
  if (entry.op_type.empty()) fields.Fail("'op_type' must not be empty");
  const std::string kind_name = fields.String("device_kind");
  auto kind = ParseDeviceKind(kind_name);
  if (!kind) fields.Fail("unknown device_kind '" + ForMessage(kind_name, 60) + "' (cpu or gpu)");
  entry.kind = *kind;
  entry.time_us = fields.Number("time_us", Sign::kNonNegative);
  if (entry.time_us > kMaxOpTimeUs) {
    fields.Fail("'time_us' is " + DescribeJsonValue(fields.Required("time_us")) + ", above the limit of 1e12 us");
  }
  const nlohmann::json& shape = fields.Array("shape");
  for (size_t d = 0; d < shape.size(); ++d) {
    auto dim = IntegerIn(shape[d], kNonNegative);
    if (!dim) {
      fields.Fail("'shape'[" + std::to_string(d) + "] is " + DescribeJsonValue(shape[d]) +
                  "; dimensions are integers from 0 to 2^63-1");
    }
    entry.shape.push_back(*dim);
  }
  if (node.contains("flops")) entry.flops = fields.Number("flops", Sign::kNonNegative);
  if (node.contains("device")) {
    entry.device = fields.String("device");
    if (entry.device.empty()) fields.Fail("'device' must not be empty (leave it out for every device of the kind)");
  }
  return entry;
}

}  // namespace

void OpTimeTable::Add(const std::string& op_type, const std::vector<int64_t>& shape, DeviceKind kind, double time_us,
                      std::optional<double> flops, const std::string& device) {
  Insert({op_type, shape, kind, time_us, flops, device, size()});
}

void OpTimeTable::Insert(OpTimeEntry entry) {
  const OpTimeEntry* earlier = nullptr;
  if (entry.flops) {
    auto [it, inserted] =
        times_by_flops_us_.try_emplace({entry.op_type, entry.shape, entry.kind, entry.device, *entry.flops}, entry);
    if (!inserted) earlier = &it->second;
  } else {
    auto [it, inserted] = times_us_.try_emplace({entry.op_type, entry.shape, entry.kind, entry.device}, entry);
    if (!inserted) earlier = &it->second;
  }
  if (earlier) {
    throw Error((source_.empty() ? std::string("op times") : ForMessage(source_)) + ": " + DescribeOpTimeEntry(entry) +
                " repeats times[" + std::to_string(earlier->index) +
                "]; give each op type, shape, device kind (device, FLOPs) once");
  }
  has_device_entries_ = has_device_entries_ || !entry.device.empty();
}

const OpTimeEntry* OpTimeTable::FindEntry(const Op& op, DeviceKind kind, const std::string& device) const {
  // The device's own entries, then the kind's; within each, by FLOPs first.
  auto find_for = [&](const std::string& name) -> const OpTimeEntry* {
    if (!times_by_flops_us_.empty()) {
      auto it = times_by_flops_us_.find({op.type, FirstOutputShape(op), kind, name, op.flops});
      if (it != times_by_flops_us_.end()) return &it->second;
    }
    if (!times_us_.empty()) {
      auto it = times_us_.find({op.type, FirstOutputShape(op), kind, name});
      if (it != times_us_.end()) return &it->second;
    }
    return nullptr;
  };
  if (has_device_entries_ && !device.empty()) {
    if (const OpTimeEntry* own = find_for(device)) return own;
  }
  return find_for("");
}

std::optional<double> OpTimeTable::Find(const Op& op, DeviceKind kind, const std::string& device) const {
  const OpTimeEntry* entry = FindEntry(op, kind, device);
  if (!entry) return std::nullopt;
  return entry->time_us;
}

std::vector<OpTimeEntry> OpTimeTable::Entries() const {
  std::vector<OpTimeEntry> out;
  out.reserve(size());
  for (const auto& [key, entry] : times_us_) out.push_back(entry);
  for (const auto& [key, entry] : times_by_flops_us_) out.push_back(entry);
  std::sort(out.begin(), out.end(), [](const OpTimeEntry& a, const OpTimeEntry& b) { return a.index < b.index; });
  return out;
}

std::vector<OpTimeEntry> OpTimeTable::Unmatched(const Graph& graph) const {
  // An entry applies when some op has its type and shape (and FLOPs, where
  // it gives them), whatever the devices: which device an op runs on is the
  // placement's choice. An entry without FLOPs that every op of its key
  // finds a more exact entry before still applies: it is the rule for the
  // rest, and a user who wrote it meant it.
  if (empty()) return {};
  std::set<std::pair<std::string, std::vector<int64_t>>> keys;
  std::set<std::tuple<std::string, std::vector<int64_t>, double>> keys_with_flops;
  for (const Op& op : graph.ops()) {
    keys.emplace(op.type, FirstOutputShape(op));
    if (!times_by_flops_us_.empty()) keys_with_flops.emplace(op.type, FirstOutputShape(op), op.flops);
  }
  std::vector<OpTimeEntry> out;
  for (const OpTimeEntry& entry : Entries()) {
    const bool matched = entry.flops ? keys_with_flops.count({entry.op_type, entry.shape, *entry.flops}) > 0
                                     : keys.count({entry.op_type, entry.shape}) > 0;
    if (!matched) out.push_back(entry);
  }
  return out;
}

OpTimeTable OpTimeTable::Load(const std::string& path) {
  const std::string where = "op times '" + ForMessage(path) + "'";
  nlohmann::json document = ReadJsonFile(path);
  JsonFields top(document, where);
  if (!document.is_object()) top.Fail("expected an object with a 'times' array, not " + DescribeJsonValue(document));
  for (const auto& [key, value] : document.items()) {
    if (key != "times" && key != "host_contention") {
      top.Fail("unknown field '" + ForMessage(key, 60) + "' (the file has 'times' and, optionally, 'host_contention')");
    }
  }
  const nlohmann::json& times = top.RequiredArray("times");
  OpTimeTable table;
  table.source_ = path;
  if (document.contains("host_contention")) {
    const nlohmann::json& value = document["host_contention"];
    if (!value.is_number()) top.Fail("'host_contention' must be a number, not " + DescribeJsonValue(value));
    const double fraction = value.get<double>();
    if (!(fraction >= 0 && fraction <= kMaxHostContention)) {
      top.Fail("'host_contention' must be between 0 and " + std::to_string(static_cast<int>(kMaxHostContention)) +
               " (a fraction: 0.25 is 25 % slower), not " + value.dump());
    }
    table.host_contention_ = fraction;
  }
  for (size_t i = 0; i < times.size(); ++i) {
    table.Insert(ReadEntry(times[i], i, where + ": times[" + std::to_string(i) + "]"));
  }
  return table;
}

void OpTimeTable::set_host_contention(double fraction) {
  if (!(fraction >= 0 && fraction <= kMaxHostContention)) {
    throw Error("host contention must be between 0 and 10, not " + std::to_string(fraction));
  }
  host_contention_ = fraction;
}

nlohmann::json OpTimeTableToJson(const OpTimeTable& table) {
  nlohmann::json times = nlohmann::json::array();
  for (const OpTimeEntry& entry : table.Entries()) {
    nlohmann::json node = {{"op_type", entry.op_type},
                           {"shape", entry.shape},
                           {"device_kind", DeviceKindName(entry.kind)},
                           {"time_us", entry.time_us}};
    if (entry.flops) node["flops"] = *entry.flops;
    if (!entry.device.empty()) node["device"] = entry.device;
    times.push_back(std::move(node));
  }
  nlohmann::json document = {{"times", std::move(times)}};
  if (table.host_contention() > 0) document["host_contention"] = table.host_contention();
  return document;
}

std::string DescribeOpTimeEntry(const OpTimeEntry& entry) {
  std::string flops;
  if (entry.flops) {
    char text[48];
    std::snprintf(text, sizeof text, ", flops %.17g", *entry.flops);
    flops = text;
  }
  return "times[" + std::to_string(entry.index) + "] (op_type '" + ForMessage(entry.op_type, 80) + "', shape " +
         FormatShape(entry.shape) + ", " + DeviceKindName(entry.kind) +
         (entry.device.empty() ? "" : " '" + ForMessage(entry.device, 60) + "'") + flops + ")";
}

std::string ExplainUnmatched(const OpTimeEntry& entry, const Graph& graph) {
  constexpr size_t kMaxListed = 4;
  std::set<std::string> types;
  std::set<std::vector<int64_t>> shapes_of_type;
  for (const Op& op : graph.ops()) {
    types.insert(op.type);
    if (op.type == entry.op_type) shapes_of_type.insert(FirstOutputShape(op));
  }
  if (entry.flops && shapes_of_type.count(entry.shape)) {
    return "ops of that type and first-output shape have other FLOPs";
  }
  if (!shapes_of_type.empty()) {
    std::string listed;
    size_t n = 0;
    for (const auto& shape : shapes_of_type) {
      if (n++ == kMaxListed) break;
      listed += (listed.empty() ? "" : ", ") + FormatShape(shape);
    }
    if (shapes_of_type.size() > kMaxListed) listed += ", ...";
    return "no op of that type has that first-output shape (its ops' shapes: " + listed + ")";
  }
  std::vector<std::string> close;
  for (const std::string& type : types) {
    if (close.size() < kMaxListed && IsClose(entry.op_type, type)) close.push_back(type);
  }
  if (!close.empty()) return "no op has that type (did you mean " + JoinQuoted(close) + "?)";
  std::vector<std::string> some(types.begin(), types.end());
  if (some.size() > kMaxListed) some.resize(kMaxListed);
  return "no op has that type (the graph's " + std::to_string(types.size()) + " op types include " +
         JoinQuoted(some) + (types.size() > kMaxListed ? ", ..." : "") + ")";
}

namespace {

// The end of a check's message about `count` entries, the first of which
// `text` describes: how many more there are, then an error (with `fix`)
// or, allowed, a warning that says they are ignored.
std::string FinishUnmatchedMessage(std::string text, size_t count, const char* one_more, const char* more,
                                   const std::string& fix, bool allow_unmatched) {
  if (count > 1) text += "; " + std::to_string(count - 1) + (count == 2 ? one_more : more);
  if (!allow_unmatched) throw Error(text + " (" + fix + ")");
  return text + "; " + (count == 1 ? "it is" : "they are") + " ignored";
}

}  // namespace

std::string CheckOpTimesApply(const OpTimeTable& table, const Graph& graph, bool allow_unmatched) {
  const std::vector<OpTimeEntry> unmatched = table.Unmatched(graph);
  if (unmatched.empty()) return "";
  const OpTimeEntry& first = unmatched.front();
  const std::string text = "op times '" + ForMessage(table.source()) + "': " + DescribeOpTimeEntry(first) +
                           " matches no op of graph '" + ForMessage(graph.name) + "': " + ExplainUnmatched(first, graph);
  return FinishUnmatchedMessage(text, unmatched.size(), " more entry matches nothing", " more entries match nothing",
                                "--allow-unmatched-op-times makes this a warning", allow_unmatched);
}

std::string CheckOpTimesDevices(const OpTimeTable& table, const Cluster& cluster, bool allow_unmatched) {
  std::vector<OpTimeEntry> stray;
  for (const OpTimeEntry& entry : table.Entries()) {
    if (entry.device.empty()) continue;
    const int32_t d = cluster.FindDevice(entry.device);
    if (d < 0 || cluster.devices[d].kind != entry.kind) stray.push_back(entry);
  }
  if (stray.empty()) return "";
  const OpTimeEntry& first = stray.front();
  const int32_t d = cluster.FindDevice(first.device);
  const std::string text = "op times '" + ForMessage(table.source()) + "': " + DescribeOpTimeEntry(first) +
                           (d < 0 ? " names a device cluster '" + ForMessage(cluster.name) + "' does not have"
                                  : " names a device that is a " + std::string(DeviceKindName(cluster.devices[d].kind)) +
                                        " in cluster '" + ForMessage(cluster.name) + "'");
  return FinishUnmatchedMessage(text, stray.size(), " more entry names such a device", " more entries name such devices",
                                "profile with this cluster file, or --allow-unmatched-op-times makes this a warning",
                                allow_unmatched);
}

}  // namespace devplace
