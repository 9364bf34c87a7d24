// `devplace profile`: times a graph's ops with their real kernels on this
// machine (exec/profile.h) and writes the op-times table that `simulate`,
// `compare` and `place` read with --op-times: the calibration of issue 17,
// with `clusters --detect`'s measured devices and links.
#include <cstdio>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/inputs.h"
#include "cli/learned_commands.h"
#include "cluster/cluster_json.h"
#include "exec/profile.h"
#include "util/error.h"
#include "util/files.h"

namespace devplace {
namespace {

struct ProfileFlags {
  std::string graph;
  std::string cluster;
  std::string out;
  int32_t steps = 10;
  uint64_t seed = 0;
};

// The uncalibrated formula against what was measured, for the types that
// take most of the time: what simulating without a profile is worth.
void PrintRooflineErrors(const Graph& graph, const Cluster& cluster, const OpTimeProfile& profile, int32_t device) {
  constexpr size_t kShown = 12;
  const std::vector<RooflineError> rows = CompareWithRoofline(graph, cluster, profile, device);
  double measured_us = 0, roofline_us = 0;
  for (const RooflineError& row : rows) {
    measured_us += row.measured_us;
    roofline_us += row.roofline_us;
  }
  std::printf("    %-30s %6s %12s %12s %9s\n", "op type (roofline vs profile)", "ops", "profiled s", "roofline s",
              "roofline/");
  for (size_t i = 0; i < rows.size() && i < kShown; ++i) {
    const RooflineError& row = rows[i];
    std::string type = ForMessage(row.op_type);
    if (type.size() > 30) type = type.substr(0, 27) + "...";
    std::printf("    %-30s %6d %12.6f %12.6f %8.2fx\n", type.c_str(), row.ops,
                row.measured_us * 1e-6, row.roofline_us * 1e-6,
                row.measured_us > 0 ? row.roofline_us / row.measured_us : 0.0);
  }
  std::printf("    %-30s %6d %12.6f %12.6f %8.2fx\n", "all types", graph.num_ops(), measured_us * 1e-6,
              roofline_us * 1e-6, measured_us > 0 ? roofline_us / measured_us : 0.0);
}

void RunProfile(const ProfileFlags& flags) {
  Graph graph = ResolveGraph(flags.graph);
  Cluster cluster = ResolveCluster(flags.cluster);
  CheckClusterIsThisMachine(cluster, "cluster '" + flags.cluster + "'");
  // Refuse an unwritable output before minutes of measuring, not after.
  CheckWritable(flags.out);
  ProfileOptions options;
  options.steps = flags.steps;
  options.seed = flags.seed;
  const OpTimeProfile profile = ProfileOpTimes(graph, cluster, options);
  WriteFileAtomically(flags.out, OpTimeTableToJson(profile.table).dump(1) + "\n");

  std::printf("graph %s (%d ops) on cluster %s, profiled on this machine\n", ForMessage(graph.name).c_str(),
              graph.num_ops(), ForMessage(cluster.name).c_str());
  for (const ProfiledDevice& d : profile.devices) {
    std::printf("  %-4s on %-10s %6d ops  step %.6f s  kernels %.6f s  executor %.2f us/op\n",
                DeviceKindName(d.kind), ForMessage(cluster.devices[d.device].name, 10).c_str(), d.ops,
                d.step_time_us * 1e-6, d.kernels_us * 1e-6, d.overhead_us_per_op);
    for (const StandInUse& s : d.stand_ins) {
      std::printf("    stand-in: %-30s %5d ops  %s\n", ForMessage(s.type, 30).c_str(), s.ops,
                  ForMessage(s.why, 120).c_str());
    }
    PrintRooflineErrors(graph, cluster, profile, d.device);
  }
  if (profile.loaded_step_time_us > 0) {
    std::printf("  host contention %.3f: the step on every CPU device at once %.6f s, alone %.6f s\n",
                profile.table.host_contention(), profile.loaded_step_time_us * 1e-6, profile.alone_step_time_us * 1e-6);
  }
  std::printf("wrote %s: %zu entries (%d told apart by FLOPs)\n", flags.out.c_str(), profile.table.size(),
              profile.entries_with_flops);
}

}  // namespace

void AddProfileCommand(CLI::App& app) {
  auto flags = std::make_shared<ProfileFlags>();
  CLI::App* cmd = app.add_subcommand("profile", LearnedCommandDescription("profile"));
  cmd->add_option("--graph", flags->graph, "Graph file (JSON) or built-in model name")->required();
  cmd->add_option("--cluster", flags->cluster, "This machine as a cluster file (devplace clusters --detect)")
      ->required();
  cmd->add_option("-o,--out", flags->out, "Write the op-times table here (docs/op-times-format.md)")->required();
  cmd->add_option("--steps", flags->steps,
                  "Steps run on each profiled device; with N > 1 the first is dropped and each op's time is the "
                  "median of the rest")
      ->check(InRange(1, 1000));
  cmd->add_option("--seed", flags->seed, "Seed of the values of the step's inputs and variables");
  cmd->callback([flags] { RunProfile(*flags); });
}

}  // namespace devplace
