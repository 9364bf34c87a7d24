// libFuzzer target: ONNX import with the training step synthesized
// (docs/import.md), libonnx's checker and shape inference included. A bad
// model must end in devplace::Error; anything else is a finding.
#include "fuzz/fuzz_input.h"
#include "import/onnx_import.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  devplace::OnnxImportOptions options;
  options.batch = 2;  // so that models with a dynamic batch get past it
  options.training = true;
  try {
    (void)devplace::ImportOnnxFile(devplace::fuzz::InputPath(data, size), options);
  } catch (const devplace::Error&) {
  }
  return 0;
}
