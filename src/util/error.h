// The one exception type devplace throws for bad input: a file, a flag, a
// spec. Its message is a complete sentence fragment naming the input and the
// problem, ready to print after "devplace: error: ".
#pragma once

#include <stdexcept>
#include <string>

namespace devplace {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws Error(message) when `condition` is false. For input validation at
// boundaries; internal invariants use assert.
void Require(bool condition, const std::string& message);

}  // namespace devplace
