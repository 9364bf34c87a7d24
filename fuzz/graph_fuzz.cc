// libFuzzer target: the graph file reader (docs/graph-format.md). A bad
// input must end in devplace::Error; any other exception, a crash, a leak
// or undefined behaviour is a finding.
#include "fuzz/fuzz_input.h"
#include "graph/graph_json.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    devplace::Graph graph = devplace::LoadGraphFile(devplace::fuzz::InputPath(data, size));
    // What loads must also write: the reader and the writer agree.
    (void)devplace::GraphToJson(graph).dump();
  } catch (const devplace::Error&) {
  }
  return 0;
}
