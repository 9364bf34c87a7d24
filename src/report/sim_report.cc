#include "report/sim_report.h"

#include "util/format_bytes.h"
#include "util/str_format.h"

namespace devplace {

namespace {

std::string StepLine(const char* label, const SimResult& result) {
  return StrFormat("%s: %.6f s%s%s\n", label, result.step_time_s(), result.oom ? "  (OUT OF MEMORY)" : "",
                   result.failed ? "  (FAILED)" : "");
}

// The reason, if any, and the per-device table.
std::string Details(const Cluster& cluster, const SimResult& result) {
  std::string out;
  if (!result.reason.empty()) out += "reason: " + result.reason + "\n";
  out += StrFormat("%-8s %6s %12s %12s %12s %12s %12s %12s  %s\n", "device", "ops", "forward_s", "backward_s",
                   "other_s", "copy_s", "peak_memory", "usable", "oom");
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    const DeviceStats& s = result.devices[d];
    double other_us = s.compute_us[static_cast<int>(Phase::kUpdate)] + s.compute_us[static_cast<int>(Phase::kOther)];
    out += StrFormat("%-8s %6d %12.6f %12.6f %12.6f %12.6f %12s %12s  %s\n", cluster.devices[d].name.c_str(),
                     s.num_ops, s.compute_us[0] * 1e-6, s.compute_us[1] * 1e-6, other_us * 1e-6,
                     (s.copy_in_us + s.copy_out_us) * 1e-6, FormatBytes(s.peak_memory_bytes).c_str(),
                     FormatBytes(cluster.devices[d].usable_memory_bytes()).c_str(), s.oom ? "OOM" : "-");
  }
  return out;
}

}  // namespace

std::string FormatSimResultText(const Cluster& cluster, const SimResult& result) {
  if (result.invalid) return "invalid placement: " + result.reason + "\n";
  return StepLine("step time", result) + Details(cluster, result);
}

std::string FormatSimulateText(const Cluster& cluster, const SimResult& step, const Measurement* protocol,
                               int32_t steps) {
  if (protocol == nullptr || step.invalid) return FormatSimResultText(cluster, step);
  std::string out =
      protocol->ok
          ? StrFormat("step time: %.6f s  (measuring protocol: mean of steps 2..%d)\n", protocol->mean_step_time_us * 1e-6, steps)
          : StrFormat("step time: none  (measuring protocol: a step of %d failed)\n", steps);
  if (!protocol->ok) out += "measurement failed: " + protocol->last.reason + "\n";
  return out + StepLine("one step", step) + Details(cluster, step);
}

nlohmann::json SimulateToJson(const Cluster& cluster, const SimResult& step, const Measurement* protocol,
                              int32_t steps) {
  nlohmann::json out = SimResultToJson(cluster, step);
  if (protocol == nullptr) return out;
  out["single_step_time_s"] = out["step_time_s"];
  out["step_time_s"] = protocol->ok ? nlohmann::json(protocol->mean_step_time_us * 1e-6) : nlohmann::json(nullptr);
  out["measured_steps"] = steps;
  out["steps_averaged"] = protocol->steps_averaged;
  out["measurement_ok"] = protocol->ok;
  if (!protocol->ok) out["measurement_failure"] = protocol->last.reason;
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
