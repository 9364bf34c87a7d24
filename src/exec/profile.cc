#include "exec/profile.h"

#include <algorithm>
#include <latch>
#include <map>
#include <thread>
#include <tuple>

#include "cost/cost_model.h"
#include "util/error.h"

namespace devplace {
namespace {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  return (*std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

// Every op on `device` where its kind may run, else on the first device
// that can run it: the profiled device does all it can alone.
Placement OnOneDevice(const Graph& graph, const Cluster& cluster, int32_t device) {
  Placement placement(graph.num_ops(), device);
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    const Op& o = graph.op(op);
    if (o.device_kinds & MaskOf(cluster.devices[device].kind)) continue;
    for (int32_t d = 0; d < cluster.num_devices(); ++d) {
      if (o.device_kinds & MaskOf(cluster.devices[d].kind)) {
        placement[op] = d;
        break;
      }
    }
  }
  return placement;
}

struct Timed {
  std::vector<double> per_op_us;  // per op: median kernel time over the kept steps
  ProfiledDevice summary;
};

Timed TimeOnDevice(Executor& executor, const Graph& graph, const Cluster& cluster, int32_t device,
                   const ProfileOptions& options) {
  const Placement placement = OnOneDevice(graph, cluster, device);
  const Device& d = cluster.devices[device];
  const int32_t steps = std::max(options.steps, 1);
  std::vector<std::vector<double>> samples(graph.num_ops());
  std::vector<double> kept_steps_us;
  Timed timed;
  for (int32_t s = 0; s < steps; ++s) {
    ExecStep step = executor.RunStep(placement);
    if (!step.result.ok()) {
      throw Error("profile: graph '" + ForMessage(graph.name) + "' cannot run on device '" + ForMessage(d.name) +
                  "' alone: " + step.result.reason +
                  " (profile runs every op on one device of each kind; give that device more memory in the cluster "
                  "file, or profile a smaller batch)");
    }
    if (s == steps - 1) timed.summary.stand_ins = step.stand_ins;
    if (s == 0 && steps > 1) continue;  // first touches and set-up
    kept_steps_us.push_back(step.result.step_time_us);
    for (int32_t op = 0; op < graph.num_ops(); ++op) {
      if (placement[op] == device) samples[op].push_back(step.op_time_us[op]);
    }
  }
  timed.per_op_us.assign(graph.num_ops(), 0);
  ProfiledDevice& summary = timed.summary;
  summary.device = device;
  summary.kind = d.kind;
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    if (placement[op] != device) continue;
    timed.per_op_us[op] = Median(std::move(samples[op]));
    summary.kernels_us += timed.per_op_us[op];
    ++summary.ops;
  }
  // The median, as for the kernels: on a shared or virtual machine one slow
  // step (a page fault storm, a neighbour) would otherwise move every entry.
  summary.step_time_us = kept_steps_us.empty() ? 0 : Median(std::move(kept_steps_us));
  if (summary.ops > 0) {
    const double parallel = std::max(d.parallel_ops, 1);
    summary.overhead_us_per_op = std::max(0.0, (summary.step_time_us * parallel - summary.kernels_us) / summary.ops);
  }
  return timed;
}

// The host's CPU devices (those owning cores), every one running the whole
// step on its own at the same time, each with its own executor: the
// median kept step of the first, so that it compares with its step alone.
double LoadedStepUs(const Graph& graph, const Cluster& cluster, const std::vector<int32_t>& host_devices,
                    const ProfileOptions& options) {
  const int32_t steps = std::max(options.steps, 2);
  std::vector<std::vector<double>> steps_us(host_devices.size());
  std::vector<std::string> failures(host_devices.size());
  std::vector<std::thread> runners;
  std::latch start(static_cast<std::ptrdiff_t>(host_devices.size()));
  for (size_t i = 0; i < host_devices.size(); ++i) {
    runners.emplace_back([&, i] {
      bool arrived = false;  // a set-up that throws must still let the others start
      try {
        ExecOptions exec_options;
        exec_options.seed = options.seed;
        Executor executor(graph, cluster, exec_options);
        const Placement placement = OnOneDevice(graph, cluster, host_devices[i]);
        arrived = true;
        start.arrive_and_wait();
        // One more step than kept on each side, so that no device runs its
        // last kept step alone.
        for (int32_t s = 0; s <= steps; ++s) {
          ExecStep step = executor.RunStep(placement);
          if (!step.result.ok()) throw Error(step.result.reason);
          if (s > 0 && s < steps) steps_us[i].push_back(step.result.step_time_us);
        }
      } catch (const std::exception& e) {
        failures[i] = e.what();
      }
      if (!arrived) start.count_down();
    });
  }
  for (std::thread& t : runners) t.join();
  for (size_t i = 0; i < failures.size(); ++i) {
    if (!failures[i].empty()) {
      throw Error("profile: the step on all CPU devices at once failed on '" +
                  ForMessage(cluster.devices[host_devices[i]].name) + "': " + ForMessage(failures[i].substr(0, failures[i].find('\n')), 300));
    }
  }
  return Median(steps_us.front());
}

}  // namespace

OpTimeProfile ProfileOpTimes(const Graph& graph, const Cluster& cluster, const ProfileOptions& options) {
  CheckClusterIsThisMachine(cluster, "cluster '" + cluster.name + "'");
  OpTimeProfile profile;
  ExecOptions exec_options;
  exec_options.seed = options.seed;
  Executor executor(graph, cluster, exec_options);

  // Every device, not one of each kind: two CPU devices of one VM can run
  // the same kernels 1.1x to 1.8x apart (the host shares one vCPU with
  // another guest). The first device of a kind gives the kind's entries;
  // the others, their own entries.
  std::vector<char> kind_seen(kNumDeviceKinds, 0);
  for (int32_t device = 0; device < cluster.num_devices(); ++device) {
    const DeviceKind kind = cluster.devices[device].kind;
    const bool first_of_kind = !kind_seen[static_cast<int>(kind)];
    kind_seen[static_cast<int>(kind)] = 1;
    const std::string entry_device = first_of_kind ? "" : cluster.devices[device].name;
    Timed timed = TimeOnDevice(executor, graph, cluster, device, options);

    // Ops by (type, first-output shape), then by FLOPs within: what a
    // table entry can tell apart.
    using Key = std::tuple<std::string, std::vector<int64_t>>;
    std::map<Key, std::map<double, std::vector<int32_t>>> groups;
    for (int32_t op = 0; op < graph.num_ops(); ++op) {
      const Op& o = graph.op(op);
      if (!(o.device_kinds & MaskOf(kind))) continue;
      const std::vector<int64_t> shape = o.outputs.empty() ? std::vector<int64_t>{} : o.outputs.front().shape;
      groups[{o.type, shape}][o.flops].push_back(op);
    }
    for (const auto& [key, by_flops] : groups) {
      const bool apart = by_flops.size() > 1;
      for (const auto& [flops, ops] : by_flops) {
        double sum_us = 0;
        for (int32_t op : ops) sum_us += timed.per_op_us[op];
        const double time_us = std::min(sum_us / ops.size() + timed.summary.overhead_us_per_op, kMaxOpTimeUs);
        profile.table.Add(std::get<0>(key), std::get<1>(key), kind, time_us,
                          apart ? std::optional<double>(flops) : std::nullopt, entry_device);
        profile.entries_with_flops += apart ? 1 : 0;
      }
    }
    profile.devices.push_back(std::move(timed.summary));
  }

  std::vector<int32_t> host_devices;
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    if (cluster.devices[d].is_host_cpu()) host_devices.push_back(d);
  }
  if (host_devices.size() > 1) {
    // Timed alone on the same device just before, so that a slow spell of
    // the machine does not pass for contention.
    std::vector<double> alone_us;
    {
      const Placement placement = OnOneDevice(graph, cluster, host_devices.front());
      for (int32_t s = 0; s < std::max(options.steps, 2); ++s) {
        ExecStep step = executor.RunStep(placement);
        if (s > 0 && step.result.ok()) alone_us.push_back(step.result.step_time_us);
      }
    }
    profile.alone_step_time_us = Median(alone_us);
    profile.loaded_step_time_us = LoadedStepUs(graph, cluster, host_devices, options);
    if (profile.alone_step_time_us > 0) {
      const double contention = profile.loaded_step_time_us / profile.alone_step_time_us - 1;
      profile.table.set_host_contention(std::clamp(contention, 0.0, kMaxHostContention));
    }
  }
  return profile;
}

std::vector<RooflineError> CompareWithRoofline(const Graph& graph, const Cluster& cluster,
                                               const OpTimeProfile& profile, int32_t device) {
  const CostModel roofline(cluster);
  const DeviceKind kind = cluster.devices[device].kind;
  std::map<std::string, RooflineError> by_type;
  for (const Op& op : graph.ops()) {
    const auto measured_us = profile.table.Find(op, kind, cluster.devices[device].name);
    if (!measured_us || !roofline.CanRun(op, device)) continue;
    RooflineError& row = by_type[op.type];
    row.op_type = op.type;
    ++row.ops;
    row.measured_us += *measured_us;
    row.roofline_us += roofline.OpTimeUs(op, device);
  }
  std::vector<RooflineError> rows;
  for (auto& [type, row] : by_type) rows.push_back(std::move(row));
  std::sort(rows.begin(), rows.end(), [](const RooflineError& a, const RooflineError& b) {
    return a.measured_us != b.measured_us ? a.measured_us > b.measured_us : a.op_type < b.op_type;
  });
  return rows;
}

}  // namespace devplace
