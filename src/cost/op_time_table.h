// Measured op times that override the cost model's formula: a table from
// (op type, output shape, device kind) to microseconds, read from JSON
// (docs/op-times-format.md).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "graph/graph.h"

namespace devplace {

class OpTimeTable {
 public:
  void Add(const std::string& op_type, const std::vector<int64_t>& shape, DeviceKind kind, double time_us);

  // The measured time of `op` (keyed by its type and first output's shape)
  // on a device of `kind`, if the table has one.
  std::optional<double> Find(const Op& op, DeviceKind kind) const;

  size_t size() const { return times_us_.size(); }
  bool empty() const { return times_us_.empty(); }

  static OpTimeTable Load(const std::string& path);

 private:
  using Key = std::tuple<std::string, std::vector<int64_t>, DeviceKind>;
  std::map<Key, double> times_us_;
};

}  // namespace devplace
