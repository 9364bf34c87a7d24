#include "learned/features/move_features.h"

#include <algorithm>
#include <cmath>

namespace devplace {

namespace {

float Clip(double value, double low, double high) { return static_cast<float>(std::clamp(value, low, high)); }

double Ratio(int64_t part, int64_t whole) { return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0; }

}  // namespace

MoveFeatureContext::MoveFeatureContext(const Graph& graph, const Cluster& cluster, const CostModel& cost,
                                       const Grouping& grouping)
    : cluster_(cluster), grouping_(grouping), devices_(cluster.num_devices()) {
  const size_t units = grouping_.groups.size();
  in_.resize(units);
  out_.resize(units);
  in_bytes_.assign(units, 0);
  out_bytes_.assign(units, 0);
  for (const GroupEdge& edge : grouping_.edges) {
    out_[edge.src].push_back({edge.dst, edge.bytes});
    in_[edge.dst].push_back({edge.src, edge.bytes});
    out_bytes_[edge.src] += edge.bytes;
    in_bytes_[edge.dst] += edge.bytes;
  }
  unit_time_us_.assign(units * devices_, 0);
  unit_bytes_.assign(units, 0);
  double total_time_us = 0;
  int64_t counted = 0;
  for (size_t g = 0; g < units; ++g) {
    const Group& group = grouping_.groups[g];
    unit_bytes_[g] = group.persistent_bytes + group.output_bytes;
    for (int32_t d = 0; d < devices_; ++d) {
      double time_us = 0;
      for (int32_t op : group.ops) time_us += cost.OpTimeUs(graph.op(op), d);
      unit_time_us_[g * devices_ + d] = time_us;
      if (std::isfinite(time_us)) {
        total_time_us += time_us;
        ++counted;
      }
    }
  }
  mean_unit_time_us_ = counted > 0 ? std::max(1e-3, total_time_us / static_cast<double>(counted)) : 1;
}

void MoveFeatureContext::AppendRows(int32_t g, std::span<const int32_t> targets, const Placement& placement,
                                    const SimResult& result, std::vector<MoveFeatureRow>& rows) const {
  const Group& group = grouping_.groups[g];
  const int32_t from = placement[group.ops.front()];
  std::vector<int64_t> in_on(devices_, 0), out_on(devices_, 0);
  for (const Neighbour& n : in_[g]) in_on[placement[grouping_.groups[n.group].ops.front()]] += n.bytes;
  for (const Neighbour& n : out_[g]) out_on[placement[grouping_.groups[n.group].ops.front()]] += n.bytes;
  const bool has_devices = result.devices.size() == static_cast<size_t>(devices_);
  const double step_us = std::max(1.0, result.step_time_us);
  auto fullness = [&](int32_t device, int64_t added_bytes) {
    const int64_t usable = cluster_.devices[device].usable_memory_bytes();
    if (usable <= 0) return 2.0;
    return (static_cast<double>(result.devices[device].peak_memory_bytes) + static_cast<double>(added_bytes)) /
           static_cast<double>(usable);
  };
  const double time_from = UnitTimeUs(g, from);
  for (int32_t to : targets) {
    MoveFeatureRow row{};
    row[0] = Clip(Ratio(in_on[to], in_bytes_[g]), 0, 1);
    row[1] = Clip(Ratio(out_on[to], out_bytes_[g]), 0, 1);
    row[2] = Clip(Ratio(in_on[from], in_bytes_[g]), 0, 1);
    row[3] = Clip(Ratio(out_on[from], out_bytes_[g]), 0, 1);
    if (has_devices) {
      row[4] = Clip(result.devices[to].compute_total_us() / step_us, 0, 2);
      row[5] = Clip(result.devices[from].compute_total_us() / step_us, 0, 2);
      row[6] = Clip(fullness(to, unit_bytes_[g]), 0, 2);
      row[7] = Clip(fullness(from, 0), 0, 2);
    }
    const double time_to = UnitTimeUs(g, to);
    const bool both_finite = std::isfinite(time_from) && std::isfinite(time_to);
    row[8] = both_finite ? Clip(std::log((time_from + 1e-3) / (time_to + 1e-3)), -3, 3) : 0;
    row[9] = std::isfinite(time_from) ? Clip(std::log1p(time_from / mean_unit_time_us_), 0, 5) : 0;
    row[10] = Clip(std::log1p(static_cast<double>(in_bytes_[g] + out_bytes_[g]) /
                              std::max<double>(1, static_cast<double>(unit_bytes_[g]))),
                   0, 5);
    row[11] = result.oom ? 1 : 0;
    rows.push_back(row);
  }
}

}  // namespace devplace
