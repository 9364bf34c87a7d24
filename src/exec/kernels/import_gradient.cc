// Recognising ONNX import's gradient ops from the graph (the layout is
// src/import/onnx_training.cc's; kernel.h, ImportGradient, describes it).
// Their type names overlap TensorFlow's gradient ops (ReluGrad, SigmoidGrad,
// MaxPoolGrad), whose operands come in another order, and equal shapes
// cannot tell the two apart, so every part of the layout is checked here.
#include <algorithm>
#include <charconv>
#include <utility>

#include "exec/kernels/kernel.h"

namespace devplace {
namespace {

using Source = std::pair<int32_t, int32_t>;  // (op, output)

bool IsFloat(const TensorSpec& t) { return t.dtype.starts_with("float") || t.dtype == "bfloat16"; }

// "X/grad" or "X/grad_N" (the importer's unique names) -> "X".
std::optional<std::string_view> ForwardName(std::string_view grad_name) {
  const size_t at = grad_name.rfind("/grad");
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  std::string_view suffix = grad_name.substr(at + 5);
  if (!suffix.empty()) {
    if (suffix.size() < 2 || suffix[0] != '_') return std::nullopt;
    int n = 0;
    auto [end, error] = std::from_chars(suffix.data() + 1, suffix.data() + suffix.size(), n);
    if (error != std::errc() || end != suffix.data() + suffix.size()) return std::nullopt;
  }
  return grad_name.substr(0, at);
}

const TensorSpec& SourceTensor(const Graph& g, const Source& s) { return g.op(s.first).outputs[s.second]; }

// The forward op's float inputs, each tensor once, in input order.
std::vector<Source> ForwardSources(const Graph& g, int32_t forward) {
  std::vector<Source> sources;
  for (int32_t e : g.in_data_edges(forward)) {
    const DataEdge& edge = g.data_edges()[e];
    const Source s{edge.src, edge.src_output};
    if (!IsFloat(SourceTensor(g, s))) continue;
    if (std::find(sources.begin(), sources.end(), s) == sources.end()) sources.push_back(s);
  }
  return sources;
}

// Whether output `k` of the gradient op goes to the backward op or update
// of `producer` (the importer puts those in the producer's group), or
// nowhere.
bool FeedsProducer(const Graph& g, int32_t grad, int32_t k, int32_t producer) {
  bool consumed = false;
  for (int32_t e : g.out_data_edges(grad)) {
    const DataEdge& edge = g.data_edges()[e];
    if (edge.src_output != k) continue;
    consumed = true;
    if (g.op(edge.dst).colocation_group == g.op(producer).colocation_group) return true;
  }
  return !consumed;
}

// Output k of the gradient op is the gradient of the k-th forward in-edge
// that needs one: walks the forward op's in-edges in order, matching each
// output to the next edge of its shape whose producer the gradient goes to.
std::optional<std::vector<int32_t>> GradientOf(const Graph& g, int32_t grad, int32_t forward,
                                               const std::vector<Source>& sources) {
  const Op& grad_op = g.op(grad);
  std::vector<int32_t> of;
  for (int32_t e : g.in_data_edges(forward)) {
    const int32_t k = static_cast<int32_t>(of.size());
    if (k == static_cast<int32_t>(grad_op.outputs.size())) break;
    const DataEdge& edge = g.data_edges()[e];
    const Source s{edge.src, edge.src_output};
    const TensorSpec& t = SourceTensor(g, s);
    if (!IsFloat(t) || t.shape != grad_op.outputs[k].shape || !FeedsProducer(g, grad, k, edge.src)) continue;
    of.push_back(static_cast<int32_t>(std::find(sources.begin(), sources.end(), s) - sources.begin()));
  }
  if (of.size() != grad_op.outputs.size()) return std::nullopt;
  return of;
}

}  // namespace

std::optional<ImportGradient> FindImportGradient(const Graph& graph, int32_t op) {
  const Op& grad = graph.op(op);
  if (grad.phase != Phase::kBackward || !grad.type.ends_with("Grad")) return std::nullopt;
  const auto forward_name = ForwardName(grad.name);
  if (!forward_name) return std::nullopt;
  const int32_t forward = graph.FindOp(*forward_name);
  if (forward < 0 || graph.op(forward).type + "Grad" != grad.type ||
      graph.op(forward).colocation_group != grad.colocation_group) {
    return std::nullopt;
  }
  // The forward op's float inputs lead the gradient op's inputs.
  const std::vector<Source> sources = ForwardSources(graph, forward);
  const auto in = graph.in_data_edges(op);
  if (in.size() < sources.size()) return std::nullopt;
  for (size_t i = 0; i < sources.size(); ++i) {
    const DataEdge& edge = graph.data_edges()[in[i]];
    if (Source{edge.src, edge.src_output} != sources[i]) return std::nullopt;
  }
  auto gradient_of = GradientOf(graph, op, forward, sources);
  if (!gradient_of) return std::nullopt;
  return ImportGradient{static_cast<int32_t>(sources.size()), std::move(*gradient_of)};
}

}  // namespace devplace
