// libFuzzer target: the measured op-times reader (docs/op-times-format.md).
// A bad input must end in devplace::Error; anything else is a finding.
#include "cost/op_time_table.h"
#include "fuzz/fuzz_input.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)devplace::OpTimeTable::Load(devplace::fuzz::InputPath(data, size));
  } catch (const devplace::Error&) {
  }
  return 0;
}
