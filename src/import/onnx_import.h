// Reads an ONNX model into a devplace graph: ONNX's checker and shape
// inference give every tensor its shape; each node becomes an op with its
// FLOPs (import/onnx_flops.h); each weight becomes a variable op co-located
// with the ops that read it. With `training`, the backward pass and the
// optimizer updates are synthesized (import/onnx_training.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace devplace {

struct OnnxImportOptions {
  // Sets the first dimension of every data input (not of weights).
  std::optional<int64_t> batch;
  // Values of named dynamic dimensions (dim_param), as --dim NAME=VALUE.
  std::map<std::string, int64_t> dims;
  bool training = false;
  // Whether the command reading the model takes --dim and --batch (import
  // does); the others' errors say to import the model first.
  bool takes_dim_flags = true;
  // Optimizer slots per parameter held with it in training (Adam: 2).
  int32_t optimizer_slots = 2;
};

struct OnnxImportResult {
  Graph graph;
  double forward_flops = 0;
  int64_t parameter_count = 0;   // trainable: float weights other than normalization statistics
  int64_t parameter_bytes = 0;
  int64_t buffer_bytes = 0;      // other weights: running means and variances, integer constants
  std::vector<std::string> unknown_op_types;  // sorted, each once; their FLOPs are guesses
  std::vector<std::string> unknown_shape_tensors;  // tensors shape inference left unknown
  // Matrix products (Conv, Gemm, MatMul, RNNs, Einsum) costed at 0 FLOPs
  // because their shapes are unknown: the step time misses their work.
  std::vector<std::string> uncosted_products;
  // Loops (and Scans) costed for one iteration: their trip count is not a
  // constant (a `while` loop) or their length unknown.
  std::vector<std::string> uncounted_loops;
  bool checker_skipped = false;  // the model is newer than this libonnx's checker knows
};

// Throws Error naming `path` for a missing, empty, truncated or non-ONNX
// file, an invalid model, or dynamic dimensions with no value.
OnnxImportResult ImportOnnxFile(const std::string& path, const OnnxImportOptions& options = {});

// The single warning line to print for `result` ("" when there is none).
std::string OnnxImportWarning(const std::string& path, const OnnxImportResult& result);

// True for paths that name ONNX files (by extension).
bool IsOnnxPath(const std::string& path);

}  // namespace devplace
