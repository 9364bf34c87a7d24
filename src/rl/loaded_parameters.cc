#include "rl/loaded_parameters.h"

namespace devplace {

ParameterShapes ShapesOf(const torch::nn::Module& module) {
  ParameterShapes shapes;
  for (const torch::Tensor& p : module.parameters()) shapes.push_back(p.sizes().vec());
  return shapes;
}

std::string LoadedParametersProblem(const torch::nn::Module& module, const ParameterShapes& shapes_before_load) {
  const std::vector<torch::Tensor> loaded = module.parameters();
  if (loaded.size() != shapes_before_load.size()) return "is of another architecture";
  for (size_t i = 0; i < loaded.size(); ++i) {
    if (loaded[i].sizes().vec() != shapes_before_load[i]) return "is of another architecture";
  }
  for (const torch::Tensor& p : loaded) {
    if (!torch::isfinite(p).all().item<bool>()) return "has values that are not finite";
  }
  return "";
}

}  // namespace devplace
