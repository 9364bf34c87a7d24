#include "report/html_report.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "report/charts.h"
#include "report/device_charts.h"
#include "report/device_colors.h"
#include "report/graph_view_svg.h"
#include "report/sim_report.h"
#include "report/svg.h"
#include "report/timeline_svg.h"
#include "util/format_bytes.h"

namespace devplace {
namespace {

constexpr const char* kStyle = R"(
body{font-family:sans-serif;margin:24px auto;max-width:1240px;color:#222;padding:0 16px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
p.caption{color:#555;font-size:13px;max-width:960px}
table{border-collapse:collapse;font-size:13px}
th,td{padding:3px 9px;border-bottom:1px solid #e4e4e4;text-align:right}
th:first-child,td:first-child,td.text{text-align:left}
tr.analysed td{background:#e8f1fb;font-weight:bold}tr.reference td{background:#f6f6f6}
svg.chart{display:block;margin:8px 0;max-width:100%;height:auto}
svg.zoomable{border:1px solid #ddd;cursor:grab;background:#fff}
.legend span{display:inline-block;margin-right:14px;font-size:13px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px;border:1px solid #0003}
#report-status{color:#999;font-size:11px;margin-top:32px}
)";

// Wheel-zoom around the pointer, drag to pan, double-click to reset, for the
// timeline and the graph view; they zoom by moving their viewBox.
constexpr const char* kZoomScript = R"(
document.querySelectorAll('svg.zoomable').forEach(function (svg) {
  var vb = svg.viewBox.baseVal, home = [vb.x, vb.y, vb.width, vb.height], drag = null;
  svg.addEventListener('wheel', function (e) {
    e.preventDefault();
    var r = svg.getBoundingClientRect(), k = e.deltaY < 0 ? 0.8 : 1.25;
    var fx = (e.clientX - r.left) / r.width, fy = (e.clientY - r.top) / r.height;
    var w = vb.width * k, h = vb.height * k;
    vb.x += (vb.width - w) * fx; vb.y += (vb.height - h) * fy; vb.width = w; vb.height = h;
  }, {passive: false});
  svg.addEventListener('mousedown', function (e) { drag = [e.clientX, e.clientY]; e.preventDefault(); });
  window.addEventListener('mouseup', function () { drag = null; });
  window.addEventListener('mousemove', function (e) {
    if (!drag) return;
    var r = svg.getBoundingClientRect();
    vb.x -= (e.clientX - drag[0]) * vb.width / r.width; vb.y -= (e.clientY - drag[1]) * vb.height / r.height;
    drag = [e.clientX, e.clientY];
  });
  svg.addEventListener('dblclick', function () { vb.x = home[0]; vb.y = home[1]; vb.width = home[2]; vb.height = home[3]; });
});
)";

// The page checks itself once loaded and says so in #report-status, which a
// headless browser's DOM dump shows the tests: every chart the page should
// have is there and has at least one shape with an area (or says it has
// nothing to show), and no script failed.
constexpr const char* kErrorScript = R"(
window.reportFailed = false;
window.onerror = function (message) {
  window.reportFailed = true;
  document.getElementById('report-status').textContent = 'report-error: ' + message;
};
)";
constexpr const char* kCheckScript = R"(
(function () {
  if (window.reportFailed) return;
  var charts = document.querySelectorAll('svg.chart'), expected = Number(document.body.dataset.charts), empty = [];
  charts.forEach(function (chart) {
    var marks = chart.querySelectorAll('.mark'), drawn = false;
    for (var i = 0; i < marks.length && !drawn; i++) {
      var box = marks[i].getBBox();
      drawn = box.width > 0 || box.height > 0;
    }
    if (!drawn && !chart.querySelector('.no-data')) empty.push(chart.id);
  });
  var status = document.getElementById('report-status');
  if (charts.length !== expected) status.textContent = 'report-error: ' + charts.length + ' charts, expected ' + expected;
  else if (empty.length) status.textContent = 'report-error: empty chart ' + empty.join(' ');
  else status.textContent = 'report-ok ' + charts.length + ' charts';
})();
)";

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string Escape(const std::string& s) { return XmlEscape(s); }

std::string ComparisonTable(const ReportInput& in) {
  const Comparison& c = in.comparison;
  const double single_gpu = c.single_gpu_us(), bound = c.bound.step_time_us();
  std::string html =
      "<table id=\"comparison\"><tr><th>method</th><th>step time (s)</th><th>vs 1 GPU</th><th>vs bound</th>"
      "<th>placer (s)</th><th>peak memory per device (* = out of memory)</th><th>note</th></tr>\n";
  for (const MethodResult& m : c.methods) {
    std::string row_class;
    if (m.method == in.analysed.label) row_class = " class=\"analysed\"";
    else if (in.reference && m.method == in.reference->label) row_class = " class=\"reference\"";
    std::string step = "-", speedup = "-", ratio = "-";
    if (m.sim.invalid) step = "invalid";
    else if (m.sim.oom) step = "OOM";
    else if (m.sim.failed) step = "failed";
    else {
      step = Format("%.6f", m.sim.step_time_s());
      if (single_gpu > 0) speedup = Format("%.2fx", single_gpu / m.sim.step_time_us);
      if (bound > 0) ratio = Format("%.2fx", m.sim.step_time_us / bound);
    }
    std::string memory;
    for (int32_t d = 0; d < in.cluster.num_devices() && !m.sim.invalid; ++d) {
      const DeviceStats& s = m.sim.devices[d];
      if (s.num_ops == 0) continue;
      memory += (memory.empty() ? "" : ", ") + in.cluster.devices[d].name + " " + FormatBytes(s.peak_memory_bytes) +
                (s.oom ? "*" : "");
    }
    const std::string note = m.note.empty() ? m.sim.reason : m.note;
    html += "<tr" + row_class + "><td>" + Escape(m.method) + "</td><td>" + step + "</td><td>" + speedup + "</td><td>" +
            ratio + "</td><td>" + Format("%.3f", m.placer_seconds) + "</td><td class=\"text\">" + Escape(memory) +
            "</td><td class=\"text\">" + Escape(note) + "</td></tr>\n";
  }
  for (const RefusedMethod& r : c.refused) {
    html += "<tr><td>" + Escape(r.method) + "</td><td>refused</td><td>-</td><td>-</td><td>" +
            Format("%.3f", r.placer_seconds) + "</td><td class=\"text\"></td><td class=\"text\">" +
            Escape("refused: " + r.reason) + "</td></tr>\n";
  }
  return html + "</table>\n";
}

std::string DeviceLegend(const Cluster& cluster, const std::vector<std::string>& colors) {
  std::string html = "<div class=\"legend\">";
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    html += "<span><i style=\"background:" + colors[d] + "\"></i>" + Escape(cluster.devices[d].name) + "</span>";
  }
  return html + "</div>\n";
}

// The search curve against steps and against wall time, with the best
// baseline as a dashed line to beat.
std::string CurveCharts(const ReportInput& in, int& charts) {
  std::vector<Point> best_by_step, mean_by_step, best_by_time, mean_by_time;
  for (const CurvePoint& p : in.run->curve) {
    if (p.best_step_time_s > 0) {
      best_by_step.emplace_back(p.step, p.best_step_time_s);
      best_by_time.emplace_back(p.seconds, p.best_step_time_s);
    }
    if (p.mean_step_time_s > 0) {
      mean_by_step.emplace_back(p.step, p.mean_step_time_s);
      mean_by_time.emplace_back(p.seconds, p.mean_step_time_s);
    }
  }
  double baseline_s = 0;
  std::string baseline_name;
  for (const MethodResult& m : in.comparison.methods) {
    if (m.method == "run" || !m.sim.ok()) continue;
    if (baseline_s == 0 || m.sim.step_time_s() < baseline_s) baseline_s = m.sim.step_time_s(), baseline_name = m.method;
  }
  std::string html;
  for (bool by_time : {false, true}) {
    LineChartSpec spec;
    spec.id = by_time ? "curve-seconds" : "curve-steps";
    spec.x_label = by_time ? "search time (s)" : "policy update";
    spec.y_label = "step time (s)";
    const auto& mean = by_time ? mean_by_time : mean_by_step;
    const auto& best = by_time ? best_by_time : best_by_step;
    spec.series.push_back({"mean of the samples", "#9ab8d8", Downsample(mean, 1000)});
    spec.series.push_back({"best so far", "#0b4f9c", Downsample(best, 1000)});
    if (baseline_s > 0 && !best.empty()) {
      const double x0 = std::min(best.front().first, mean.empty() ? best.front().first : mean.front().first);
      const double x1 = std::max(best.back().first, mean.empty() ? best.back().first : mean.back().first);
      spec.series.push_back({"best baseline (" + baseline_name + ")", "#c0392b", {{x0, baseline_s}, {x1, baseline_s}}, true});
    }
    html += LineChart(spec);
    ++charts;
  }
  return html;
}

// Several runs' best-so-far curves in one chart, against the placements
// measured (the fair axis between methods: a sample costs the same
// simulation whatever proposed it) and against wall time.
std::string OverlaidCurveCharts(const ReportInput& in, int& charts) {
  static const char* kColors[] = {"#0b4f9c", "#c0392b", "#27ae60", "#8e44ad", "#d35400", "#16a085", "#7f8c8d", "#2c3e50"};
  std::string html;
  for (bool by_time : {false, true}) {
    LineChartSpec spec;
    spec.id = by_time ? "overlay-seconds" : "overlay-samples";
    spec.x_label = by_time ? "search time (s)" : "placements measured";
    spec.y_label = "best step time so far (s)";
    for (size_t r = 0; r < in.overlaid.size(); ++r) {
      std::vector<Point> best;
      for (const CurvePoint& p : in.overlaid[r]->curve) {
        const double x = by_time ? p.seconds : static_cast<double>(p.samples >= 0 ? p.samples : p.step);
        if (p.best_step_time_s > 0) best.emplace_back(x, p.best_step_time_s);
      }
      const std::string name = std::filesystem::path(in.overlaid[r]->path).filename().string();
      spec.series.push_back({name.empty() ? in.overlaid[r]->path : name, kColors[r % 8], Downsample(best, 1000)});
    }
    html += LineChart(spec);
    ++charts;
  }
  return html;
}

std::string Section(const std::string& id, const std::string& title, const std::string& caption,
                    const std::string& body) {
  return "<section id=\"" + id + "-section\"><h2>" + Escape(title) + "</h2>\n<p class=\"caption\">" + caption +
         "</p>\n" + body + "</section>\n";
}

}  // namespace

std::string HtmlReport(const ReportInput& in) {
  const Graph& graph = in.graph;
  const Cluster& cluster = in.cluster;
  const std::vector<std::string> colors = DeviceColors(cluster);
  std::vector<std::string> device_names;
  for (const Device& d : cluster.devices) device_names.push_back(d.name);
  const Grouping grouping = BuildGrouping(graph);
  const SimResult& analysed = in.analysed.result;
  int charts = 0;

  std::string body;
  const std::string title = "devplace report: " + graph.name + " on " + cluster.name;
  body += "<h1>" + Escape(title) + "</h1>\n<p class=\"caption\">" + std::to_string(graph.num_ops()) + " ops in " +
          std::to_string(grouping.num_groups()) + " groups, " + std::to_string(cluster.num_devices()) +
          " devices. Step-time lower bound " + Format("%.6f", in.comparison.bound.step_time_us() * 1e-6) +
          " s. Analysed placement: <b>" + Escape(in.analysed.label) + "</b>, " +
          (analysed.invalid ? "invalid: " + Escape(analysed.reason)
                            : Format("%.6f", analysed.step_time_s()) + " s" + (analysed.oom ? " (OUT OF MEMORY)" : "")) +
          (in.reference ? ", drawn beside <b>" + Escape(in.reference->label) + "</b>" : std::string()) + ".</p>\n";

  body += Section("comparison", "Placements compared",
                  "Each method's placement, simulated. <i>vs 1 GPU</i> is the speed-up over everything on one GPU; "
                  "<i>vs bound</i> how far the step time is from the lower bound. The analysed placement's row is "
                  "highlighted.",
                  ComparisonTable(in));

  if (in.run) {
    std::string curve_body;
    if (in.run->curve.empty()) {
      curve_body = "<p>This run has no curve.csv (a baseline run has none).</p>\n";
    } else {
      curve_body = CurveCharts(in, charts);
    }
    body += Section("curve", "Search curve of " + in.run->path,
                    "Step time of the best placement found so far and the mean of each update's sampled placements "
                    "that ran, against policy updates and against wall time; dashed, the best baseline to beat.",
                    curve_body);
  }

  if (!in.overlaid.empty()) {
    body += Section("overlay", "Search curves compared",
                    "The best step time found so far by each run, against the placements it measured (a curve without "
                    "a samples column falls back to policy updates) and against wall time.",
                    OverlaidCurveCharts(in, charts));
  }

  if (!analysed.invalid) {
    std::vector<LabelledResult> placements = {{in.analysed.label, &analysed}};
    if (in.reference && !in.reference->result.invalid) placements.push_back({in.reference->label, &in.reference->result});
    std::string names = "<b>" + Escape(in.analysed.label) + "</b> (left)";
    if (placements.size() > 1) names += " and <b>" + Escape(in.reference->label) + "</b> (right)";
    body += Section("compute", "Compute per device",
                    "Busy time of each device in one step for " + names +
                        ", forward below and backward above, as in Figures 8 and 9 of the 2017 paper.",
                    DeviceComputeChart(cluster, placements, colors));
    body += Section("copies", "Copies per device",
                    "Time of the transfers arriving at and leaving each device for " + names +
                        " (Figure 9, bottom, of the 2017 paper).",
                    DeviceCopyChart(cluster, placements, colors));
    body += Section("memory", "Memory per device",
                    "Peak memory of each device for " + names +
                        " against the memory its tensors may use (capacity less what the framework reserves); "
                        "a bar past the line, its label marked !, ran out of memory. Below, memory in use over the "
                        "analysed step.",
                    DeviceMemoryChart(cluster, placements, colors) + MemoryOverTimeChart(cluster, analysed, colors));
    charts += 4;
    std::string trace_link;
    if (!in.trace_href.empty()) {
      trace_link = " The same step as a Chrome trace for Perfetto: <a href=\"" + Escape(in.trace_href) + "\">" +
                   Escape(in.trace_href) + "</a>.";
    }
    body += Section("timeline", "Timeline of the step",
                    "The analysed placement's step, simulated: a lane per device (ops shaded by phase: forward light, "
                    "backward full, update dark) and per link channel (transfers coloured by their destination). "
                    "Scroll to zoom, drag to pan, double-click to reset; hover for names." + trace_link,
                    DeviceLegend(cluster, colors) + TimelineSvg(graph, cluster, analysed, colors));
    ++charts;
  }
  body += Section("graph", "Graph coloured by device",
                  "One box per co-location group (" + std::to_string(grouping.num_groups()) +
                      " groups), placed left to right by the depth of its forward ops, as in Figures 4 and 5 of the "
                      "2017 paper; a group whose ops run on several devices is split in proportion. Edges carry "
                      "tensors forward, wider for more bytes. Scroll to zoom, drag to pan, hover for names.",
                  DeviceLegend(cluster, colors) +
                      GraphViewSvg(graph, grouping, in.analysed.placement, colors, device_names));
  ++charts;

  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + Escape(title) +
         "</title>\n<style>" + kStyle + "</style></head>\n<body data-charts=\"" + std::to_string(charts) + "\">\n" +
         body + "<div id=\"report-status\">report not checked: scripts are off</div>\n<script>" + kErrorScript +
         "</script>\n<script>" + kZoomScript + "</script>\n<script>" + kCheckScript + "</script>\n</body></html>\n";
}

}  // namespace devplace
