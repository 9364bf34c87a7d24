#include "report/device_charts.h"

#include <algorithm>
#include <functional>

#include "report/charts.h"
#include "report/device_colors.h"
#include "report/sim_report.h"
#include "report/svg.h"
#include "util/format_bytes.h"

namespace devplace {
namespace {

// Devices some placement uses: a device no placement touches is noise.
std::vector<int32_t> UsedDevices(const Cluster& cluster, const std::vector<LabelledResult>& placements) {
  std::vector<int32_t> used;
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    for (const LabelledResult& p : placements) {
      if (!p.result->invalid && p.result->devices[d].num_ops > 0) {
        used.push_back(d);
        break;
      }
    }
  }
  return used;
}

std::string Seconds(double us) { return Num(us * 1e-6, 6) + " s"; }

// The legend of a chart whose bars stack shades of each device's colour.
std::vector<LegendEntry> ShadeLegend(const std::vector<std::pair<std::string, double>>& shades) {
  std::vector<LegendEntry> legend;
  for (const auto& [label, amount] : shades) legend.push_back({label, Shade("#707070", amount)});
  return legend;
}

// One group per used device, one bar in it per placement, made by `make_bar`.
void AddDeviceGroups(BarChartSpec& spec, const Cluster& cluster, const std::vector<LabelledResult>& placements,
                     const std::function<Bar(const LabelledResult&, int32_t device)>& make_bar) {
  for (int32_t d : UsedDevices(cluster, placements)) {
    BarGroup group{cluster.devices[d].name, {}};
    for (const LabelledResult& p : placements) group.bars.push_back(make_bar(p, d));
    spec.groups.push_back(std::move(group));
  }
}

}  // namespace

std::string DeviceComputeChart(const Cluster& cluster, const std::vector<LabelledResult>& placements,
                               const std::vector<std::string>& colors) {
  BarChartSpec spec;
  spec.id = "device-compute";
  spec.y_label = "compute time (s)";
  spec.legend = ShadeLegend({{"forward", 0.45}, {"backward", 0}, {"update, other", -0.35}});
  AddDeviceGroups(spec, cluster, placements, [&](const LabelledResult& p, int32_t d) -> Bar {
    const DeviceStats& s = p.result->devices[d];
    const std::string who = p.label + " on " + cluster.devices[d].name + ": ";
    const double rest_us = s.compute_us[static_cast<int>(Phase::kUpdate)] + s.compute_us[static_cast<int>(Phase::kOther)];
    return {p.label,
            {{s.compute_us[0] * 1e-6, Shade(colors[d], 0.45), who + "forward " + Seconds(s.compute_us[0])},
             {s.compute_us[1] * 1e-6, colors[d], who + "backward " + Seconds(s.compute_us[1])},
             {rest_us * 1e-6, Shade(colors[d], -0.35), who + "update and other " + Seconds(rest_us)}}};
  });
  return StackedBarChart(spec);
}

std::string DeviceCopyChart(const Cluster& cluster, const std::vector<LabelledResult>& placements,
                            const std::vector<std::string>& colors) {
  BarChartSpec spec;
  spec.id = "device-copies";
  spec.y_label = "copy time (s)";
  spec.legend = ShadeLegend({{"arriving", 0}, {"leaving", 0.45}});
  AddDeviceGroups(spec, cluster, placements, [&](const LabelledResult& p, int32_t d) -> Bar {
    const DeviceStats& s = p.result->devices[d];
    const std::string who = p.label + " on " + cluster.devices[d].name + ": ";
    return {p.label,
            {{s.copy_in_us * 1e-6, colors[d], who + "arriving " + Seconds(s.copy_in_us) + ", " + FormatBytes(s.bytes_in)},
             {s.copy_out_us * 1e-6, Shade(colors[d], 0.45),
              who + "leaving " + Seconds(s.copy_out_us) + ", " + FormatBytes(s.bytes_out)}}};
  });
  return StackedBarChart(spec);
}

std::string DeviceMemoryChart(const Cluster& cluster, const std::vector<LabelledResult>& placements,
                              const std::vector<std::string>& colors) {
  BarChartSpec spec;
  spec.id = "device-memory";
  spec.y_label = "peak memory (% of usable)";
  spec.legend = ShadeLegend({{"persistent", -0.35}, {"rest of the peak", 0.45}});
  spec.y_reference = 100;
  spec.y_reference_label = "capacity";
  AddDeviceGroups(spec, cluster, placements, [&](const LabelledResult& p, int32_t d) -> Bar {
    const double capacity = static_cast<double>(std::max<int64_t>(cluster.devices[d].usable_memory_bytes(), 1));
    const DeviceStats& s = p.result->devices[d];
    const int64_t persistent = std::min(s.persistent_bytes, s.peak_memory_bytes);
    const std::string who = p.label + " on " + cluster.devices[d].name + ": peak " + FormatBytes(s.peak_memory_bytes) +
                            " of " + FormatBytes(cluster.devices[d].usable_memory_bytes()) + (s.oom ? ", OUT OF MEMORY" : "");
    return {p.label + (s.oom ? "!" : ""),
            {{100.0 * persistent / capacity, Shade(colors[d], -0.35), who + "; persistent " + FormatBytes(persistent)},
             {100.0 * (s.peak_memory_bytes - persistent) / capacity, Shade(colors[d], 0.45), who}}};
  });
  return StackedBarChart(spec);
}

std::string MemoryOverTimeChart(const Cluster& cluster, const SimResult& result, const std::vector<std::string>& colors) {
  LineChartSpec spec;
  spec.id = "memory-over-time";
  spec.x_label = "time in the step (ms)";
  spec.y_label = "memory in use (% of usable)";
  spec.y_from_zero = true;
  spec.y_reference = 100;
  spec.y_reference_label = "capacity";
  std::vector<std::vector<Point>> by_device(cluster.num_devices());
  for (const MemoryEvent& e : result.memory_events) {
    const double capacity = static_cast<double>(std::max<int64_t>(cluster.devices[e.device].usable_memory_bytes(), 1));
    by_device[e.device].emplace_back(e.time_us * 1e-3, 100.0 * e.bytes_in_use / capacity);
  }
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    if (by_device[d].empty()) continue;
    std::stable_sort(by_device[d].begin(), by_device[d].end(),
                     [](const Point& a, const Point& b) { return a.first < b.first; });
    // Held until the step ends.
    by_device[d].emplace_back(result.step_time_us * 1e-3, by_device[d].back().second);
    spec.series.push_back({cluster.devices[d].name, colors[d], Downsample(by_device[d], 600)});
  }
  return LineChart(spec);
}

}  // namespace devplace
