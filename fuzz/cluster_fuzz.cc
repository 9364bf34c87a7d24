// libFuzzer target: the cluster file reader (docs/cluster-format.md). A bad
// input must end in devplace::Error; anything else is a finding.
#include "cluster/cluster_json.h"
#include "fuzz/fuzz_input.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    devplace::Cluster cluster = devplace::LoadClusterFile(devplace::fuzz::InputPath(data, size));
    (void)devplace::ClusterToJson(cluster).dump();
  } catch (const devplace::Error&) {
  }
  return 0;
}
