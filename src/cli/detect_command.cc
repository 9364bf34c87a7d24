// `devplace clusters --detect` as devplace-learn runs it: this machine
// measured (src/exec/probes) and written as a cluster file. devplace itself
// hands the flag over to devplace-learn (learned_commands.h).
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cluster/cluster_json.h"
#include "exec/probes/detect_cluster.h"
#include "util/files.h"

namespace devplace {

void RunDetect(const DetectFlags& flags) {
  DetectOptions options;
  options.cpu_devices = flags.cpu_devices;
  options.gpus = !flags.no_gpus;
  const Cluster cluster = DetectCluster(options);
  const std::string text = ClusterToJson(cluster).dump(2) + "\n";
  if (flags.out.empty()) {
    std::cout << text;
    return;
  }
  WriteFileAtomically(flags.out, text);
  std::printf("wrote %s: %d devices\n", flags.out.c_str(), cluster.num_devices());
}

}  // namespace devplace
