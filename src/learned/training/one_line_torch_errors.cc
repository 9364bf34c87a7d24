// RunWithOneLineTorchErrors (one_line_errors.h): the one part that needs
// torch's headers, so that the rest links without torch.
#include <c10/util/Exception.h>

#include "learned/training/one_line_errors.h"
#include "util/error.h"

namespace devplace {

void RunWithOneLineTorchErrors(const std::string& context, const std::function<void()>& body) {
  try {
    body();
  } catch (const c10::Error& e) {
    throw OneLineError(context, e.what_without_backtrace());
  }
}

}  // namespace devplace
