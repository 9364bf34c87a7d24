#include "report/compare_table.h"

#include <cstdio>

#include "report/sim_report.h"
#include "util/format_bytes.h"
#include "util/str_format.h"

namespace devplace {

double Comparison::single_gpu_us() const {
  for (const MethodResult& m : methods) {
    if (m.method == "single_gpu" && m.sim.ok()) return m.sim.step_time_us;
  }
  return 0;
}

namespace {

std::string Cell(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// Seconds to six decimals from a millisecond (at least four significant
// digits) to a day (at most 12 characters, the column's width); outside
// that, six significant digits: a 3 us step printed 0.000003 (one digit),
// and a 1e15 s step a 23-character number that pushed the columns apart.
std::string StepSeconds(double seconds) {
  return Cell(seconds >= 1e-3 && seconds < 1e5 ? "%.6f" : "%.6g", seconds);
}

}  // namespace

std::string FormatComparisonText(const Cluster& cluster, const Comparison& c) {
  std::string out = StrFormat("graph %s (%d ops) on cluster %s\n", c.graph_name.c_str(), c.num_ops,
                              c.cluster_name.c_str());
  // The work bound divides by the ops the cluster runs at once (each
  // device's parallel_ops), which is the device count only when every
  // device runs one op at a time.
  int64_t slots = 0;
  for (const Device& d : cluster.devices) slots += d.parallel_ops;
  out += StrFormat("step-time lower bound: %s s (critical path %s s, total work over %lld op slots on %d devices "
                   "%s s)\n\n",
                   StepSeconds(c.bound.step_time_us() * 1e-6).c_str(), StepSeconds(c.bound.critical_path_us * 1e-6).c_str(),
                   static_cast<long long>(slots), cluster.num_devices(), StepSeconds(c.bound.work_us * 1e-6).c_str());
  out += StrFormat("%-11s %12s %9s %9s %10s  %s\n", "method", "step_time_s", "vs_1gpu", "vs_bound", "placer_s",
                   "peak memory per device (* = out of memory)");
  const double single_gpu = c.single_gpu_us();
  for (const MethodResult& m : c.methods) {
    std::string step = "-", speedup = "-", ratio = "-";
    if (m.sim.invalid) {
      step = "invalid";
    } else if (m.sim.oom) {
      step = "OOM";
    } else if (m.sim.failed) {
      step = "failed";
    } else {
      step = StepSeconds(m.sim.step_time_s());
      if (single_gpu > 0) speedup = Cell("%.2fx", single_gpu / m.sim.step_time_us);
      if (c.bound.step_time_us() > 0) ratio = Cell("%.2fx", m.sim.step_time_us / c.bound.step_time_us());
    }
    std::string memory;
    if (!m.sim.invalid) {
      for (int32_t d = 0; d < cluster.num_devices(); ++d) {
        const DeviceStats& s = m.sim.devices[d];
        if (s.num_ops == 0) continue;
        if (!memory.empty()) memory += "  ";
        memory += cluster.devices[d].name + " " + FormatBytes(s.peak_memory_bytes) + (s.oom ? "*" : "");
      }
    }
    out += StrFormat("%-11s %12s %9s %9s %10.3f  %s\n", m.method.c_str(), step.c_str(), speedup.c_str(),
                     ratio.c_str(), m.placer_seconds, memory.c_str());
  }
  for (const RefusedMethod& r : c.refused) {
    out += StrFormat("%-11s %12s %9s %9s %10.3f\n", r.method.c_str(), "refused", "-", "-", r.placer_seconds);
  }
  bool any_note = false;
  auto note = [&](const std::string& method, const std::string& text) {
    if (!any_note) out += "\nnotes:\n";
    any_note = true;
    out += "  " + method + ": " + text + "\n";
  };
  for (const MethodResult& m : c.methods) {
    if (m.note.empty() && !m.sim.invalid) continue;
    note(m.method, m.note.empty() ? m.sim.reason : m.note);
  }
  for (const RefusedMethod& r : c.refused) note(r.method, "refused: " + r.reason);
  return out;
}

nlohmann::json ComparisonToJson(const Cluster& cluster, const Comparison& c) {
  using nlohmann::json;
  json rows = json::array();
  const double single_gpu = c.single_gpu_us();
  for (const MethodResult& m : c.methods) {
    bool ran = m.sim.ok();
    json peak = json::object();
    for (int32_t d = 0; d < cluster.num_devices() && !m.sim.invalid; ++d) {
      peak[cluster.devices[d].name] = m.sim.devices[d].peak_memory_bytes;
    }
    json row = {{"method", m.method},
                {"step_time_s", m.sim.invalid ? json(nullptr) : json(m.sim.step_time_s())},
                {"oom", m.sim.oom},
                {"invalid", m.sim.invalid},
                {"placer_seconds", m.placer_seconds},
                {"lower_bound_s", c.bound.step_time_us() * 1e-6},
                {"speedup_over_single_gpu", ran && single_gpu > 0 ? json(single_gpu / m.sim.step_time_us) : json(nullptr)},
                {"peak_memory_bytes", std::move(peak)}};
    std::string note = m.note.empty() ? m.sim.reason : m.note;
    if (!note.empty()) row["note"] = note;
    rows.push_back(std::move(row));
  }
  for (const RefusedMethod& r : c.refused) {
    rows.push_back({{"method", r.method},
                    {"step_time_s", nullptr},
                    {"oom", false},
                    {"invalid", false},
                    {"refused", true},
                    {"placer_seconds", r.placer_seconds},
                    {"lower_bound_s", c.bound.step_time_us() * 1e-6},
                    {"speedup_over_single_gpu", nullptr},
                    {"peak_memory_bytes", json::object()},
                    {"note", "refused: " + r.reason}});
  }
  return rows;
}

}  // namespace devplace
