#include "learned/files/loaded_parameters.h"

#include <sstream>

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

std::string ModuleBytes(torch::nn::Module& module) {
  torch::serialize::OutputArchive archive;
  module.save(archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  return bytes.str();
}

std::string LoadModuleBytes(torch::nn::Module& module, const std::string& bytes) {
  const ParameterShapes shapes = ShapesOf(module);
  try {
    torch::serialize::InputArchive archive;
    std::istringstream in(bytes);
    archive.load_from(in);
    module.load(archive);
  } catch (const c10::Error&) {
    return "does not load (damaged, or not of the architecture it states)";
  }
  return LoadedParametersProblem(module, shapes);
}

void CopyParameters(const torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> source = from.parameters();
  std::vector<torch::Tensor> target = to.parameters();
  for (size_t i = 0; i < target.size(); ++i) target[i].copy_(source[i]);
}

void WriteOptimizerState(torch::serialize::OutputArchive& archive, torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive optimizer_archive;
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
}

void ReadOptimizerState(torch::serialize::InputArchive& archive, torch::optim::Optimizer& optimizer) {
  torch::serialize::InputArchive optimizer_archive;
  archive.read("optimizer", optimizer_archive);
  optimizer.load(optimizer_archive);
}

void WriteGeneratorState(torch::serialize::OutputArchive& archive, const std::string& key, torch::Generator& generator) {
  archive.write(key, generator.get_state());
}

void ReadGeneratorState(torch::serialize::InputArchive& archive, const std::string& key, torch::Generator& generator) {
  torch::Tensor state;
  archive.read(key, state);
  generator.set_state(state);
}

}  // namespace devplace
