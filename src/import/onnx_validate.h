// Checks a parsed ONNX model for what would crash, hang or mislead
// libonnx's checker, its shape inference or devplace's own folding, before
// any of them sees it. libonnx (1.12) trusts much of what its checker does
// not test: it divides by strides and block sizes, reads tensor data by the
// length its dims promise, and indexes inputs a node does not have. Hostile
// models are stopped here with one line naming the node, tensor or
// attribute instead.
#pragma once

#include <string>

#include "onnx/onnx_pb.h"

namespace devplace {

// Tensors (initializers, constants, declared shapes) larger than this are
// taken for corrupt: no accelerator holds one, and byte counts built from
// them must stay far from int64 overflow.
constexpr int64_t kMaxOnnxTensorBytes = int64_t{1} << 50;  // 1 PiB

// Throws Error("<source>: ...") for the first problem found in `model`'s
// graph and, recursively, its subgraphs (If, Loop, Scan bodies).
void ValidateOnnxModel(const onnx::ModelProto& model, const std::string& source);

// The dims product of a tensor with `dims`, times `element_bytes`, or -1
// when a dim is negative or the product passes kMaxOnnxTensorBytes.
int64_t CheckedTensorBytes(const std::vector<int64_t>& dims, int64_t element_bytes);

// The bytes per element of an ONNX element type; 0 for strings and unknowns.
int64_t OnnxElementBytes(int32_t elem_type);

// A name from the model made safe to carry into a graph file (JSON needs
// UTF-8): bytes that are not UTF-8 become "\xNN", control characters
// their escapes. Valid names come back unchanged.
std::string SafeOnnxName(const std::string& name);

}  // namespace devplace
