#include "report/timeline_svg.h"

#include <algorithm>
#include <map>

#include "report/device_colors.h"
#include "report/sim_report.h"
#include "report/svg.h"
#include "util/format_bytes.h"

namespace devplace {
namespace {

constexpr double kLabelWidth = 120, kTop = 28, kLaneHeight = 14, kLaneGap = 3, kLeftPad = 8;

// One event to draw: an op or a transfer hop.
struct Span {
  double start_us;
  double end_us;
  int kind;          // what colours it: a phase, or a destination device
  std::string what;  // tooltip of a lone event
};

struct Lane {
  std::string label;
  int32_t device = -1;  // for op lanes
  std::vector<Span> spans;
};

std::string Ms(double us) { return Num(us * 1e-3, 3) + " ms"; }

// Ops on device lanes: each op takes the first sub-lane free at its start,
// as the Chrome trace does.
std::vector<Lane> OpLanes(const Graph& graph, const Cluster& cluster, const SimResult& result) {
  std::vector<OpEvent> events = result.op_events;
  std::stable_sort(events.begin(), events.end(), [](const OpEvent& a, const OpEvent& b) { return a.start_us < b.start_us; });
  std::vector<std::vector<Lane>> by_device(cluster.num_devices());
  std::vector<std::vector<double>> free_at(cluster.num_devices());
  for (const OpEvent& e : events) {
    auto& lanes = by_device[e.device];
    auto& free = free_at[e.device];
    size_t lane = 0;
    while (lane < free.size() && free[lane] > e.start_us) ++lane;
    if (lane == free.size()) {
      free.push_back(0);
      lanes.push_back({cluster.devices[e.device].name + (lane == 0 ? "" : " #" + std::to_string(lane + 1)), e.device, {}});
    }
    free[lane] = e.end_us;
    const Op& op = graph.op(e.op);
    lanes[lane].spans.push_back({e.start_us, e.end_us, static_cast<int>(op.phase),
                                 op.name + " (" + op.type + ", " + PhaseName(op.phase) + ")"});
  }
  std::vector<Lane> out;
  for (auto& lanes : by_device) {
    for (Lane& lane : lanes) out.push_back(std::move(lane));
  }
  return out;
}

std::vector<Lane> LinkLanes(const Graph& graph, const Cluster& cluster, const SimResult& result) {
  std::map<int32_t, Lane> by_channel;
  for (const TransferEvent& e : result.transfer_events) {
    Lane& lane = by_channel[e.channel];
    if (lane.label.empty()) lane.label = cluster.ChannelName(e.channel);
    lane.spans.push_back({e.start_us, e.end_us, e.to_device,
                          graph.op(e.src_op).name + ":" + std::to_string(e.src_output) + " " +
                              cluster.devices[e.from_device].name + " -> " + cluster.devices[e.to_device].name + ", " +
                              FormatBytes(e.bytes)});
  }
  std::vector<Lane> out;
  for (auto& [channel, lane] : by_channel) {
    std::stable_sort(lane.spans.begin(), lane.spans.end(),
                     [](const Span& a, const Span& b) { return a.start_us < b.start_us; });
    out.push_back(std::move(lane));
  }
  return out;
}

}  // namespace

std::string TimelineSvg(const Graph& graph, const Cluster& cluster, const SimResult& result,
                        const std::vector<std::string>& colors, const TimelineOptions& options) {
  std::vector<Lane> op_lanes = OpLanes(graph, cluster, result);
  std::vector<Lane> link_lanes = LinkLanes(graph, cluster, result);
  const size_t lanes = op_lanes.size() + link_lanes.size();
  const double step_us = std::max(result.step_time_us, 1e-9);
  const double width = kLabelWidth + kLeftPad + options.plot_width_px + 16;
  const double height = kTop + lanes * (kLaneHeight + kLaneGap) + (link_lanes.empty() ? 0 : 12) + 10;
  SvgBuilder svg("timeline", width, height, "zoomable");
  const double us_per_px = step_us / options.plot_width_px;
  auto px = [&](double us) { return kLabelWidth + kLeftPad + us / us_per_px; };

  SvgStyle grid;
  grid.stroke = "#e4e4e4";
  grid.mark = false;
  for (double t : NiceTicks(0, step_us * 1e-3, 8)) {
    svg.Line(px(t * 1e3), kTop - 6, px(t * 1e3), height - 6, grid);
    svg.Text(px(t * 1e3), kTop - 10, TickLabel(t) + " ms", "middle", 10);
  }

  double y = kTop;
  // `color_of` and `name_of` say how to draw and call a span's kind.
  auto draw_lane = [&](const Lane& lane, auto color_of, auto name_of) {
    svg.Text(kLabelWidth, y + kLaneHeight - 3, lane.label, "end", 10);
    const double merge_gap_us = options.merge_gap_px * us_per_px;
    for (size_t i = 0; i < lane.spans.size();) {
      // A block grows over neighbours closer than the merge gap that are of
      // its kind, or that it or they are too narrow to see apart (under a
      // pixel); it takes the colour of the kind busy longest in it.
      const Span& first = lane.spans[i];
      double end_us = first.end_us;
      std::map<int, double> busy_us = {{first.kind, first.end_us - first.start_us}};
      size_t j = i + 1;
      for (; j < lane.spans.size(); ++j) {
        const Span& next = lane.spans[j];
        if (next.start_us - end_us > merge_gap_us) break;
        const bool narrow = end_us - first.start_us < us_per_px || next.end_us - next.start_us < us_per_px;
        if (next.kind != first.kind && !narrow) break;
        end_us = std::max(end_us, next.end_us);
        busy_us[next.kind] += next.end_us - next.start_us;
      }
      int kind = first.kind;
      double total_us = 0;
      for (const auto& [k, us] : busy_us) {
        total_us += us;
        if (us > busy_us[kind]) kind = k;
      }
      const size_t count = j - i;
      std::string tooltip = Ms(first.start_us) + " to " + Ms(end_us) + ": ";
      if (count == 1) {
        tooltip += first.what;
      } else {
        tooltip += std::to_string(count) + (lane.device >= 0 ? " ops" : " transfers");
        for (const auto& [k, us] : busy_us) {
          tooltip += ", " + Num(total_us > 0 ? 100 * us / total_us : 0, 0) + "% " + name_of(k);
        }
      }
      SvgStyle style;
      style.fill = color_of(kind);
      // A lone event too short to see is drawn half a pixel wide.
      svg.Rect(px(first.start_us), y, std::max((end_us - first.start_us) / us_per_px, 0.5), kLaneHeight, style, tooltip);
      i = j;
    }
    y += kLaneHeight + kLaneGap;
  };
  for (const Lane& lane : op_lanes) {
    const std::string base = colors[lane.device];
    draw_lane(
        lane,
        [&](int phase) {
          switch (static_cast<Phase>(phase)) {
            case Phase::kForward: return Shade(base, 0.45);
            case Phase::kBackward: return base;
            default: return Shade(base, -0.35);
          }
        },
        [](int phase) { return std::string(PhaseName(static_cast<Phase>(phase))); });
  }
  if (!link_lanes.empty()) {
    y += 12;
    svg.Text(kLabelWidth, y - 4, "links", "end", 10, "lane-heading");
  }
  for (const Lane& lane : link_lanes) {
    draw_lane(
        lane, [&](int device) { return colors[device]; },
        [&](int device) { return "to " + cluster.devices[device].name; });
  }
  return svg.Finish();
}

}  // namespace devplace
