// `devplace profile`: times a graph's ops with their real kernels on this
// machine (exec/profile.h) and writes the op-times table that `simulate`,
// `compare` and `place` read with --op-times: the calibration of issue 17,
// with `clusters --detect`'s measured devices and links.
#include <cstdio>

#include "cli/commands.h"
#include "cli/inputs.h"
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
  int32_t steps = 5;
  uint64_t seed = 0;
};

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
  }
  std::printf("wrote %s: %zu entries (%d told apart by FLOPs)\n", flags.out.c_str(), profile.table.size(),
              profile.entries_with_flops);
}

}  // namespace

void AddProfileCommand(CLI::App& app) {
  auto flags = std::make_shared<ProfileFlags>();
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Time every op of a graph with its real kernel on this machine and write the op-times table that "
      "simulate/compare/place read with --op-times");
  cmd->add_option("--graph", flags->graph, "Graph file (JSON) or built-in model name")->required();
  cmd->add_option("--cluster", flags->cluster, "This machine as a cluster file (devplace clusters --detect)")
      ->required();
  cmd->add_option("-o,--out", flags->out, "Write the op-times table here (docs/op-times-format.md)")->required();
  cmd->add_option("--steps", flags->steps,
                  "Steps run on each profiled device; with N > 1 the first is dropped and each op's time is the "
                  "median of the rest")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--seed", flags->seed, "Seed of the values of the step's inputs and variables");
  cmd->callback([flags] { RunProfile(*flags); });
}

}  // namespace devplace
