#include "report/sim_report.h"

#include <cstdio>

namespace devplace {

std::string FormatBytes(int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : "%.2f %s", value, kUnits[unit]);
  return buffer;
}

std::string FormatSimResultText(const Cluster& cluster, const SimResult& result) {
  std::string out;
  char line[256];
  if (result.invalid) {
    return "invalid placement: " + result.reason + "\n";
  }
  std::snprintf(line, sizeof line, "step time: %.6f s%s%s\n", result.step_time_s(), result.oom ? "  (OUT OF MEMORY)" : "",
                result.failed ? "  (FAILED)" : "");
  out += line;
  if (!result.reason.empty()) out += "reason: " + result.reason + "\n";
  std::snprintf(line, sizeof line, "%-8s %6s %12s %12s %12s %12s %12s %12s  %s\n", "device", "ops", "forward_s",
                "backward_s", "other_s", "copy_s", "peak_memory", "usable", "oom");
  out += line;
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    const DeviceStats& s = result.devices[d];
    double other_us = s.compute_us[static_cast<int>(Phase::kUpdate)] + s.compute_us[static_cast<int>(Phase::kOther)];
    std::snprintf(line, sizeof line, "%-8s %6d %12.6f %12.6f %12.6f %12.6f %12s %12s  %s\n",
                  cluster.devices[d].name.c_str(), s.num_ops, s.compute_us[0] * 1e-6, s.compute_us[1] * 1e-6,
                  other_us * 1e-6, (s.copy_in_us + s.copy_out_us) * 1e-6, FormatBytes(s.peak_memory_bytes).c_str(),
                  FormatBytes(cluster.devices[d].usable_memory_bytes()).c_str(), s.oom ? "OOM" : "-");
    out += line;
  }
  return out;
}

nlohmann::json SimResultToJson(const Cluster& cluster, const SimResult& result) {
  using nlohmann::json;
  json devices = json::array();
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    const DeviceStats& s = result.devices[d];
    devices.push_back({{"name", cluster.devices[d].name},
                       {"ops", s.num_ops},
                       {"compute_s", s.compute_total_us() * 1e-6},
                       {"forward_s", s.compute_us[static_cast<int>(Phase::kForward)] * 1e-6},
                       {"backward_s", s.compute_us[static_cast<int>(Phase::kBackward)] * 1e-6},
                       {"update_s", s.compute_us[static_cast<int>(Phase::kUpdate)] * 1e-6},
                       {"other_s", s.compute_us[static_cast<int>(Phase::kOther)] * 1e-6},
                       {"copy_s", (s.copy_in_us + s.copy_out_us) * 1e-6},
                       {"copy_in_bytes", s.bytes_in},
                       {"copy_out_bytes", s.bytes_out},
                       {"persistent_bytes", s.persistent_bytes},
                       {"peak_memory_bytes", s.peak_memory_bytes},
                       {"memory_capacity_bytes", cluster.devices[d].memory_bytes},
                       {"usable_memory_bytes", cluster.devices[d].usable_memory_bytes()},
                       {"oom", s.oom}});
  }
  json out = {{"step_time_s", result.invalid ? json(nullptr) : json(result.step_time_s())},
              {"oom", result.oom},
              {"invalid", result.invalid},
              {"failed", result.failed},
              {"devices", std::move(devices)}};
  if (!result.reason.empty()) out["reason"] = result.reason;
  return out;
}

}  // namespace devplace
