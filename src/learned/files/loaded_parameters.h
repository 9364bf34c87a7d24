// Checks on a module's parameters after torch loaded them from a file.
//
// torch's Module::load copies each archived tensor into the parameter of its
// name without checking that the shapes agree (a tensor of another size
// replaces the parameter) or that the values are finite. A policy file or
// checkpoint someone damaged, edited or wrote with other network sizes must be
// refused in one line, not become a policy that samples NaN or fails deep in
// a matmul later. Every loader of a network takes the shapes before loading
// and asks for the problem after.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace devplace {

using ParameterShapes = std::vector<std::vector<int64_t>>;

// The shape of each of `module`'s parameters, in its parameters() order.
ParameterShapes ShapesOf(const torch::nn::Module& module);

// What is wrong with `module`'s parameters now that they were loaded, given
// the shapes they had before: "is of another architecture" when a shape
// changed (or a parameter came or went), "has values that are not finite"
// when one holds NaN or infinity; empty when nothing is wrong. The phrase is
// meant to follow the name of what was loaded ("checkpoint's policy ...").
std::string LoadedParametersProblem(const torch::nn::Module& module, const ParameterShapes& shapes_before_load);

// A module's parameters and buffers as the bytes of a torch archive, and
// back: what a policy or encoder file stores. LoadModuleBytes returns the
// problem as LoadedParametersProblem words it ("do not load" when torch
// cannot read the bytes), empty when the module now holds them.
std::string ModuleBytes(torch::nn::Module& module);
std::string LoadModuleBytes(torch::nn::Module& module, const std::string& bytes);

// A trainer's optimizer state (under "optimizer") and random generator
// (under `key`) in a checkpoint's archive, and back; the readers throw
// c10::Error, as torch does, when the archive lacks them or they do not fit.
void WriteOptimizerState(torch::serialize::OutputArchive& archive, torch::optim::Optimizer& optimizer);
void ReadOptimizerState(torch::serialize::InputArchive& archive, torch::optim::Optimizer& optimizer);
void WriteGeneratorState(torch::serialize::OutputArchive& archive, const std::string& key, torch::Generator& generator);
void ReadGeneratorState(torch::serialize::InputArchive& archive, const std::string& key, torch::Generator& generator);

// Copies `from`'s parameter values into `to`, a module of the same shape
// (another controller's policy, the best encoder so far).
void CopyParameters(const torch::nn::Module& from, torch::nn::Module& to);

}  // namespace devplace
