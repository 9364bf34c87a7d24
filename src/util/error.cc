#include "util/error.h"

namespace devplace {

void Require(bool condition, const std::string& message) {
  if (!condition) throw Error(message);
}

}  // namespace devplace
