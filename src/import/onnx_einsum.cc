#include "import/onnx_einsum.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "import/onnx_fold.h"

namespace devplace {
namespace {

// One operand's labels: letters, and where its "..." stands (-1: none).
struct Term {
  std::string labels;
  int ellipsis_at = -1;  // index in labels before which the ellipsis stands
};

std::optional<Term> ParseTerm(const std::string& text) {
  Term term;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 3, "...") == 0) {
      if (term.ellipsis_at >= 0) return std::nullopt;  // at most one
      term.ellipsis_at = static_cast<int>(term.labels.size());
      i += 3;
    } else if (std::isalpha(static_cast<unsigned char>(text[i]))) {
      term.labels += text[i++];
    } else {
      return std::nullopt;
    }
  }
  return term;
}

}  // namespace

std::optional<EinsumResult> EvaluateEinsum(const std::string& equation, const std::vector<std::vector<int64_t>>& inputs) {
  std::string text;
  for (char c : equation) {
    if (c != ' ') text += c;
  }
  const size_t arrow = text.find("->");
  const std::string left = text.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    const size_t comma = left.find(',', start);
    std::optional<Term> term = ParseTerm(left.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!term) return std::nullopt;
    terms.push_back(*term);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != inputs.size()) return std::nullopt;

  // Each label's size (1 broadcasts), and the ellipsis's dims, right-aligned.
  std::map<char, int64_t> size_of;
  std::map<char, int> count_of;
  std::vector<int64_t> ellipsis;
  for (size_t k = 0; k < terms.size(); ++k) {
    const Term& term = terms[k];
    const std::vector<int64_t>& dims = inputs[k];
    const size_t named = term.labels.size();
    if (dims.size() < named || (term.ellipsis_at < 0 && dims.size() != named)) return std::nullopt;
    const size_t spread = dims.size() - named;  // dims under the ellipsis
    for (size_t i = 0; i < named; ++i) {
      const size_t at = static_cast<int>(i) < term.ellipsis_at || term.ellipsis_at < 0 ? i : i + spread;
      const int64_t d = dims[at];
      if (d < 0) return std::nullopt;
      auto [it, fresh] = size_of.emplace(term.labels[i], d);
      if (!fresh && it->second != d) {
        if (it->second != 1 && d != 1) return std::nullopt;
        it->second = std::max(it->second, d);
      }
      ++count_of[term.labels[i]];
    }
    if (spread > ellipsis.size()) ellipsis.insert(ellipsis.begin(), spread - ellipsis.size(), 1);
    for (size_t j = 0; j < spread; ++j) {
      const int64_t d = dims[term.ellipsis_at + j];
      int64_t& e = ellipsis[ellipsis.size() - spread + j];
      if (d < 0 || (e != 1 && d != 1 && e != d)) return std::nullopt;
      e = std::max(e, d);
    }
  }

  // The output: as written, or (implicit) the ellipsis then the labels seen
  // once, in alphabetical order.
  Term output;
  if (arrow != std::string::npos) {
    std::optional<Term> term = ParseTerm(text.substr(arrow + 2));
    if (!term) return std::nullopt;
    output = *term;
    for (char c : output.labels) {
      if (!size_of.count(c) || std::count(output.labels.begin(), output.labels.end(), c) > 1) return std::nullopt;
    }
  } else {
    output.ellipsis_at = 0;
    for (const auto& [label, count] : count_of) {
      if (count == 1) output.labels += label;
    }
  }
  EinsumResult result;
  for (size_t i = 0; i <= output.labels.size(); ++i) {
    if (static_cast<int>(i) == output.ellipsis_at) result.output_dims.insert(result.output_dims.end(), ellipsis.begin(), ellipsis.end());
    if (i < output.labels.size()) result.output_dims.push_back(size_of.at(output.labels[i]));
  }
  if (output.ellipsis_at < 0 && !ellipsis.empty() &&
      std::any_of(ellipsis.begin(), ellipsis.end(), [](int64_t d) { return d != 1; })) {
    return std::nullopt;  // an ellipsis of the inputs must appear in the output
  }
  result.multiply_adds = 1;
  for (const auto& [label, size] : size_of) result.multiply_adds *= static_cast<double>(size);
  for (int64_t d : ellipsis) result.multiply_adds *= static_cast<double>(d);
  return result;
}

int CompleteEinsumShapes(onnx::GraphProto& graph) {
  GraphShapes shapes(graph);
  int written = 0;
  for (const auto& node : graph.node()) {
    if (node.op_type() != "Einsum" || (!node.domain().empty() && node.domain() != "ai.onnx")) continue;
    if (node.output_size() != 1 || node.output(0).empty() || shapes.Find(node.output(0))) continue;
    const onnx::AttributeProto* equation = nullptr;
    for (const auto& a : node.attribute()) {
      if (a.name() == "equation") equation = &a;
    }
    if (!equation) continue;
    std::vector<std::vector<int64_t>> inputs;
    for (const auto& name : node.input()) {
      const std::vector<int64_t>* dims = shapes.Find(name);
      if (!dims) break;
      inputs.push_back(*dims);
    }
    if (static_cast<int>(inputs.size()) != node.input_size()) continue;
    std::optional<EinsumResult> result = EvaluateEinsum(equation->s(), inputs);
    // Inference wrote the output's type and rank; only its dims are added.
    if (result && shapes.Complete(node.output(0), result->output_dims)) ++written;
  }
  return written;
}

}  // namespace devplace
