#include "learned/training/parameters_for_tests.h"

#include <cstdio>
#include <cstdlib>

namespace devplace {

void WriteParametersForTests(const char* variable, const std::string& suffix, const torch::nn::Module& module) {
  const char* prefix = std::getenv(variable);
  if (prefix == nullptr) return;
  const std::string path = std::string(prefix) + suffix;
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) return;
  for (const torch::Tensor& p : module.parameters()) {
    const torch::Tensor flat = p.detach().to(torch::kFloat64).contiguous().reshape({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) std::fprintf(out, "%.17g\n", flat.data_ptr<double>()[i]);
  }
  std::fclose(out);
}

}  // namespace devplace
