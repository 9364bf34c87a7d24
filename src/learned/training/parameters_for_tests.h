// For the tests that run several processes (tests/distributed_test.cc):
// with the environment variable `variable` set to a path prefix, a module's
// parameters are written to PREFIX + suffix, one value a line at full
// precision, so that a test can compare the copies that different ranks or
// controllers hold. Unset, nothing is written.
#pragma once

#include <torch/torch.h>

#include <string>

namespace devplace {

void WriteParametersForTests(const char* variable, const std::string& suffix, const torch::nn::Module& module);

}  // namespace devplace
