// How long an op takes on a device and a tensor takes on a link. An op's
// time is a roofline (compute at a per-op-type fraction of peak, or memory
// traffic at a fraction of bandwidth, whichever is slower) plus the device's
// launch overhead; a measured time, where the table has one, replaces it.
#pragma once

#include <limits>
#include <map>
#include <string>

#include "cluster/cluster.h"
#include "cost/op_time_table.h"
#include "graph/graph.h"

namespace devplace {

// Fraction of peak a device kind reaches, by op type. Types not listed use
// the kind's default. Matmuls and convolutions run close to peak; the rest
// are usually memory-bound and their compute efficiency matters little.
struct EfficiencyTable {
  std::map<std::string, double> compute_by_type[kNumDeviceKinds];
  double default_compute[kNumDeviceKinds] = {0.3, 0.5};
  double memory[kNumDeviceKinds] = {0.6, 0.8};

  static EfficiencyTable Default();
  double Compute(const std::string& op_type, DeviceKind kind) const;
};

inline constexpr double kCannotRun = std::numeric_limits<double>::infinity();

class CostModel {
 public:
  explicit CostModel(const Cluster& cluster, OpTimeTable measured = {},
                     EfficiencyTable efficiency = EfficiencyTable::Default());

  bool CanRun(const Op& op, int32_t device) const {
    return (op.device_kinds & MaskOf(cluster_->devices[device].kind)) != 0;
  }

  // Microseconds `op` takes on `device`; kCannotRun if the device's kind
  // cannot run it.
  double OpTimeUs(const Op& op, int32_t device) const;

  // Microseconds to move `bytes` from `src` to `dst`, hop after hop, on an
  // otherwise idle cluster.
  double TransferTimeUs(int32_t src, int32_t dst, int64_t bytes) const;

  const Cluster& cluster() const { return *cluster_; }
  const OpTimeTable& measured() const { return measured_; }

 private:
  const Cluster* cluster_;
  OpTimeTable measured_;
  EfficiencyTable efficiency_;
};

}  // namespace devplace
