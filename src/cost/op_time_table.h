// Measured op times that override the cost model's formula: a table from
// (op type, output shape, device kind), and optionally the op's FLOPs, to
// microseconds, read from and written to JSON (docs/op-times-format.md).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/cluster.h"
#include "graph/graph.h"

namespace devplace {

// The most a table entry may say one op takes: 1e12 us (11.6 days). Far
// above any op; a larger value is a unit mistake, and the bound keeps sums
// of step times far from overflow.
inline constexpr double kMaxOpTimeUs = 1e12;
// Ten times slower under load is past any machine's sharing; more is a typo.
inline constexpr double kMaxHostContention = 10;

struct OpTimeEntry {
  std::string op_type;
  std::vector<int64_t> shape;
  DeviceKind kind = DeviceKind::kGpu;
  double time_us = 0;
  // When set, the entry applies only to ops with exactly these FLOPs: ops of
  // one type and output shape can differ in their inputs (a 1x1 and a 3x3
  // convolution with the same output), and `devplace profile` times them
  // apart. An entry with FLOPs comes before one without for the same key.
  std::optional<double> flops;
  // When set, the entry applies only to the device of this name (and kind),
  // before any entry for the whole kind: devices of one kind need not run
  // at one speed (two vCPUs of one VM, where the host shares one of them
  // with another guest), and `devplace profile` times each device.
  std::string device;
  size_t index = 0;  // position in the file's "times" array, for messages
};

class OpTimeTable {
 public:
  // Adds an entry; a second entry for the same (type, shape, kind, device,
  // FLOPs) is an Error, as the two would silently disagree.
  void Add(const std::string& op_type, const std::vector<int64_t>& shape, DeviceKind kind, double time_us,
           std::optional<double> flops = std::nullopt, const std::string& device = "");

  // The measured time of `op` (keyed by its type and first output's shape,
  // and its FLOPs where an entry gives them) on the device named `device`
  // of `kind`, if the table has one: that device's own entry first, then
  // the kind's.
  std::optional<double> Find(const Op& op, DeviceKind kind, const std::string& device = "") const;

  size_t size() const { return times_us_.size() + times_by_flops_us_.size(); }
  // Whether some entry names a device (OpTimeEntry::device).
  bool has_device_entries() const { return has_device_entries_; }
  bool empty() const { return size() == 0; }
  // Every entry, in the order they were added (file order).
  std::vector<OpTimeEntry> Entries() const;
  // How much longer an op on a host CPU device (a CPU device that owns
  // cores of this machine, as `clusters --detect` writes them) takes while
  // every other such device computes too: 0.25 is 25 % longer. The cores
  // share caches, memory bandwidth and power. `devplace profile` measures
  // it; 0 (the default, and every preset) keeps the devices independent.
  double host_contention() const { return host_contention_; }
  // An Error outside [0, kMaxHostContention] or not finite.
  void set_host_contention(double fraction);

  // The file the table was read from ("" for one built in code).
  const std::string& source() const { return source_; }

  // The entries that apply to no op of `graph` (no op has their type and
  // first-output shape), in file order.
  std::vector<OpTimeEntry> Unmatched(const Graph& graph) const;

  // Reads and validates a table file; every problem is an Error naming the
  // file and the entry.
  static OpTimeTable Load(const std::string& path);

 private:
  // The device's name ("" for the whole kind) is part of every key.
  using Key = std::tuple<std::string, std::vector<int64_t>, DeviceKind, std::string>;
  using FlopsKey = std::tuple<std::string, std::vector<int64_t>, DeviceKind, std::string, double>;
  void Insert(OpTimeEntry entry);
  const OpTimeEntry* FindEntry(const Op& op, DeviceKind kind, const std::string& device) const;

  std::map<Key, OpTimeEntry> times_us_;
  std::map<FlopsKey, OpTimeEntry> times_by_flops_us_;
  std::string source_;
  double host_contention_ = 0;
  bool has_device_entries_ = false;  // some entry names a device
};

// The table as the file format has it ({"times": [...]}, entries in order),
// which OpTimeTable::Load reads back to an equal table.
nlohmann::json OpTimeTableToJson(const OpTimeTable& table);

// An entry of a table in one line for a message: "times[3] (op_type
// 'Matmul', shape [64, 1024], gpu)", names escaped.
std::string DescribeOpTimeEntry(const OpTimeEntry& entry);

// Why `entry` matches no op of `graph`, with what it might have meant: the
// op types that are close to its type, or the shapes ops of its type have.
std::string ExplainUnmatched(const OpTimeEntry& entry, const Graph& graph);

// Checks that every entry of `table` applies to some op of `graph`. An
// entry that applies to none is an Error naming the file and the entry,
// unless `allow_unmatched`, when the same text is returned as a warning
// (empty when everything matched).
std::string CheckOpTimesApply(const OpTimeTable& table, const Graph& graph, bool allow_unmatched);

// The same for the devices entries name: an entry for a device `cluster`
// does not have, or has of another kind, applies to nothing (a table
// profiled on another machine's cluster file, or a renamed device).
std::string CheckOpTimesDevices(const OpTimeTable& table, const Cluster& cluster, bool allow_unmatched);

}  // namespace devplace
