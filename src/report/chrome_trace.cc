#include "report/chrome_trace.h"

#include <map>

#include "util/files.h"

namespace devplace {

nlohmann::json ChromeTraceJson(const Graph& graph, const Cluster& cluster, const SimResult& result) {
  using nlohmann::json;
  json events = json::array();
  const int32_t D = cluster.num_devices();
  // Device d is process d; link channels are threads of process D.
  const int32_t links_pid = D;
  for (int32_t d = 0; d < D; ++d) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", d}, {"args", {{"name", cluster.devices[d].name}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", d}, {"args", {{"sort_index", d}}}});
  }
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", links_pid}, {"args", {{"name", "links"}}}});
  events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", links_pid}, {"args", {{"sort_index", D}}}});

  // Ops: devices that run several at once get a lane per concurrent op.
  std::vector<std::vector<double>> lane_free_us(D);
  for (const OpEvent& e : result.op_events) {
    auto& lanes = lane_free_us[e.device];
    size_t lane = 0;
    while (lane < lanes.size() && lanes[lane] > e.start_us) ++lane;
    if (lane == lanes.size()) lanes.push_back(0);
    lanes[lane] = e.end_us;
    const Op& op = graph.op(e.op);
    events.push_back({{"ph", "X"},
                      {"name", op.name},
                      {"cat", PhaseName(op.phase)},
                      {"pid", e.device},
                      {"tid", lane},
                      {"ts", e.start_us},
                      {"dur", e.end_us - e.start_us},
                      {"args", {{"type", op.type}, {"flops", op.flops}}}});
  }
  std::map<int32_t, bool> channels_seen;
  for (const TransferEvent& e : result.transfer_events) {
    if (!channels_seen[e.channel]) {
      channels_seen[e.channel] = true;
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", links_pid}, {"tid", e.channel},
                        {"args", {{"name", cluster.ChannelName(e.channel)}}}});
    }
    events.push_back({{"ph", "X"},
                      {"name", graph.op(e.src_op).name + ":" + std::to_string(e.src_output)},
                      {"cat", "transfer"},
                      {"pid", links_pid},
                      {"tid", e.channel},
                      {"ts", e.start_us},
                      {"dur", e.end_us - e.start_us},
                      {"args", {{"from", cluster.devices[e.from_device].name},
                                {"to", cluster.devices[e.to_device].name},
                                {"bytes", e.bytes}}}});
  }
  for (const MemoryEvent& e : result.memory_events) {
    events.push_back({{"ph", "C"}, {"name", "memory"}, {"pid", e.device}, {"ts", e.time_us},
                      {"args", {{"bytes", e.bytes_in_use}}}});
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

void WriteChromeTrace(const std::string& path, const Graph& graph, const Cluster& cluster, const SimResult& result) {
  WriteFileAtomically(path, ChromeTraceJson(graph, cluster, result).dump() + "\n");
}

}  // namespace devplace
