#include "graph/graph.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "util/error.h"
#include "util/json_fields.h"

namespace devplace {

const char* DeviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kGpu: return "gpu";
  }
  return "?";
}

std::optional<DeviceKind> ParseDeviceKind(std::string_view name) {
  if (name == "cpu" || name == "CPU") return DeviceKind::kCpu;
  if (name == "gpu" || name == "GPU") return DeviceKind::kGpu;
  return std::nullopt;
}

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kForward: return "forward";
    case Phase::kBackward: return "backward";
    case Phase::kUpdate: return "update";
    case Phase::kOther: return "other";
  }
  return "?";
}

std::optional<Phase> ParsePhase(std::string_view name) {
  for (int p = 0; p < kNumPhases; ++p) {
    if (name == PhaseName(static_cast<Phase>(p))) return static_cast<Phase>(p);
  }
  return std::nullopt;
}

int64_t DtypeBytes(std::string_view dtype) {
  static const std::pair<std::string_view, int64_t> kSizes[] = {
      {"float32", 4}, {"float", 4},  {"float16", 2}, {"half", 2},  {"bfloat16", 2}, {"float64", 8},
      {"double", 8},  {"int64", 8},  {"int32", 4},   {"int16", 2}, {"int8", 1},     {"uint8", 1},
      {"bool", 1},    {"uint16", 2}, {"uint32", 4},  {"uint64", 8}};
  for (const auto& [name, bytes] : kSizes) {
    if (name == dtype) return bytes;
  }
  return 0;
}

std::optional<int64_t> TensorSpec::CheckedBytes(std::span<const int64_t> shape, int64_t element_bytes) {
  if (element_bytes < 0) return std::nullopt;
  // An empty tensor is 0 bytes wherever its zero dimension stands: [0, 2^62]
  // and [2^62, 0] alike, as the ONNX importer counts them.
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    empty |= d == 0;
  }
  if (empty) return 0;
  int64_t bytes = element_bytes;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(bytes, d, &bytes)) return std::nullopt;
  }
  return bytes;
}

namespace {

std::string ShapeText(std::span<const int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size() && i < 8; ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() > 8) text += ", ...";
  return text + "]";
}

}  // namespace

TensorSpec TensorSpec::Make(std::vector<int64_t> shape, std::string dtype) {
  std::optional<int64_t> bytes = CheckedBytes(shape, DtypeBytes(dtype));
  if (!bytes) {
    throw Error("a tensor of shape " + ShapeText(shape) + " and dtype " + ForMessage(dtype) +
                " has a negative dimension or more bytes than fit in 64 bits");
  }
  TensorSpec tensor;
  tensor.bytes = *bytes;
  tensor.shape = std::move(shape);
  tensor.dtype = std::move(dtype);
  return tensor;
}

int32_t Graph::AddOp(Op op) {
  finalized_ = false;
  ops_.push_back(std::move(op));
  return static_cast<int32_t>(ops_.size() - 1);
}

void Graph::AddDataEdge(int32_t src, int32_t src_output, int32_t dst) {
  finalized_ = false;
  data_edges_.push_back({src, src_output, dst});
}

void Graph::AddControlEdge(int32_t src, int32_t dst) {
  finalized_ = false;
  control_edges_.push_back({src, dst});
}

std::string Graph::Describe(int32_t op) const {
  return "op " + std::to_string(ops_[op].id) + " ('" + ForMessage(ops_[op].name) + "')";
}

void Graph::CheckOpText(int32_t i, const std::string& where) const {
  const Op& op = ops_[i];
  auto check = [&](const std::string& text, const char* field) {
    if (!IsValidUtf8(text)) throw Error(where + Describe(i) + ": " + field + " '" + ForMessage(text) + "' is not valid UTF-8");
  };
  check(op.name, "name");
  check(op.type, "type");
  check(op.colocation_group, "colocation_group");
  for (const TensorSpec& t : op.outputs) check(t.dtype, "output dtype");
}

namespace {

// Compressed adjacency: items of node v are items[offsets[v] .. offsets[v+1]).
void BuildCsr(int32_t num_nodes, const std::vector<std::pair<int32_t, int32_t>>& node_item,
              std::vector<int32_t>& offsets, std::vector<int32_t>& items) {
  offsets.assign(num_nodes + 1, 0);
  for (const auto& [node, item] : node_item) ++offsets[node + 1];
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  items.assign(node_item.size(), 0);
  std::vector<int32_t> cursor(offsets.begin(), offsets.end() - 1);
  for (const auto& [node, item] : node_item) items[cursor[node]++] = item;
}

}  // namespace

void Graph::Finalize(const std::string& source) {
  const std::string where = ForMessage(source) + ": ";
  // Indices are int32 everywhere downstream.
  constexpr size_t kMaxItems = std::numeric_limits<int32_t>::max();
  if (ops_.size() >= kMaxItems || data_edges_.size() >= kMaxItems || control_edges_.size() >= kMaxItems) {
    throw Error(where + "more than 2^31 - 1 ops or edges");
  }
  const int32_t n = num_ops();
  if (!IsValidUtf8(name)) throw Error(where + "the graph's name '" + ForMessage(name) + "' is not valid UTF-8");
  if (expert_stages < 0) throw Error(where + "negative expert_stages " + std::to_string(expert_stages));

  // Ids and names are unique.
  {
    std::map<int64_t, int32_t> by_id;
    for (int32_t i = 0; i < n; ++i) {
      auto [it, inserted] = by_id.emplace(ops_[i].id, i);
      if (!inserted) {
        throw Error(where + "duplicate op id " + std::to_string(ops_[i].id) + " ('" + ForMessage(ops_[it->second].name) +
                    "' and '" + ForMessage(ops_[i].name) + "')");
      }
    }
  }
  ops_by_name_.resize(n);
  std::iota(ops_by_name_.begin(), ops_by_name_.end(), 0);
  std::sort(ops_by_name_.begin(), ops_by_name_.end(),
            [this](int32_t a, int32_t b) { return ops_[a].name < ops_[b].name; });
  for (int32_t i = 0; i < n; ++i) {
    const Op& op = ops_[ops_by_name_[i]];
    if (op.name.empty()) throw Error(where + "op " + std::to_string(op.id) + " has an empty name");
    if (i > 0 && ops_[ops_by_name_[i - 1]].name == op.name) {
      throw Error(where + "duplicate op name '" + ForMessage(op.name) + "'");
    }
  }

  // Sizes are sane, and so are their sums: a total that wraps around int64
  // would make an impossible graph look small.
  int64_t total_bytes = 0;
  double flops_sum = 0;
  auto add_bytes = [&](int64_t bytes, int32_t op) {
    if (__builtin_add_overflow(total_bytes, bytes, &total_bytes) || total_bytes > kMaxGraphBytes) {
      throw Error(where + Describe(op) + ": the graph's byte counts add up to more than 2^60 bytes (1 EiB)");
    }
  };
  for (int32_t i = 0; i < n; ++i) {
    const Op& op = ops_[i];
    CheckOpText(i, where);
    auto negative = [&](const char* field) { throw Error(where + Describe(i) + ": negative " + field); };
    if (!std::isfinite(op.flops)) throw Error(where + Describe(i) + ": flops is not a finite number");
    if (op.flops < 0) negative("flops");
    if (op.bytes_read < 0) negative("bytes_read");
    if (op.bytes_written < 0) negative("bytes_written");
    if (op.persistent_bytes < 0) negative("persistent_bytes");
    if (op.temporary_bytes < 0) negative("temporary_bytes");
    for (int64_t bytes : {op.bytes_read, op.bytes_written, op.persistent_bytes, op.temporary_bytes}) add_bytes(bytes, i);
    for (const TensorSpec& t : op.outputs) {
      if (t.bytes < 0) negative("output bytes");
      if (t.aliases_persistent && t.bytes > op.persistent_bytes) {
        throw Error(where + Describe(i) + ": an output aliases persistent memory larger than the op's persistent_bytes");
      }
      for (int64_t d : t.shape) {
        if (d < 0) negative("output dimension");
      }
      add_bytes(t.bytes, i);
    }
    flops_sum += op.flops;
    if (!std::isfinite(flops_sum)) throw Error(where + Describe(i) + ": the graph's flops add up to more than a double holds");
    if ((op.device_kinds & kAllDeviceKinds) == 0) throw Error(where + Describe(i) + ": no device kind can run it");
    if (expert_stages > 0 && (op.expert_stage < kExpertHost || op.expert_stage >= expert_stages)) {
      throw Error(where + Describe(i) + ": expert_stage " + std::to_string(op.expert_stage) + " is outside 0.." +
                  std::to_string(expert_stages - 1) + " (or -1 for the host)");
    }
  }

  // Edges point at real ops and outputs.
  for (const DataEdge& e : data_edges_) {
    if (e.dst < 0 || e.dst >= n) throw Error(where + "data edge into a missing op (index " + std::to_string(e.dst) + ")");
    if (e.src < 0 || e.src >= n) throw Error(where + Describe(e.dst) + ": input from a missing op");
    if (e.src_output < 0 || e.src_output >= static_cast<int32_t>(ops_[e.src].outputs.size())) {
      throw Error(where + Describe(e.dst) + ": input from output " + std::to_string(e.src_output) + " of " +
                  Describe(e.src) + ", which has " + std::to_string(ops_[e.src].outputs.size()) + " outputs");
    }
    if (e.src == e.dst) throw Error(where + Describe(e.dst) + ": consumes its own output (a cycle)");
    // A tensor may be copied once per consumer, so each edge counts.
    add_bytes(ops_[e.src].outputs[e.src_output].bytes, e.dst);
  }
  for (const ControlEdge& e : control_edges_) {
    if (e.dst < 0 || e.dst >= n) throw Error(where + "control edge into a missing op (index " + std::to_string(e.dst) + ")");
    if (e.src < 0 || e.src >= n) throw Error(where + Describe(e.dst) + ": control input from a missing op");
    if (e.src == e.dst) throw Error(where + Describe(e.dst) + ": control input from itself (a cycle)");
  }

  // Co-location groups can run on at least one device kind.
  {
    std::map<std::string, DeviceKindMask> group_kinds;
    for (const Op& op : ops_) {
      if (op.colocation_group.empty()) continue;
      auto [it, inserted] = group_kinds.emplace(op.colocation_group, op.device_kinds);
      it->second &= op.device_kinds;
    }
    for (int32_t i = 0; i < n; ++i) {
      const Op& op = ops_[i];
      if (!op.colocation_group.empty() && group_kinds[op.colocation_group] == 0) {
        throw Error(where + "co-location group '" + ForMessage(op.colocation_group) +
                    "' has no device kind that can run all its ops (" +
                    Describe(i) + " is one of them)");
      }
    }
  }

  // Adjacency. Out-edges sorted by (src_output, dst) keep a tensor's consumers together.
  std::vector<int32_t> edge_order(data_edges_.size());
  std::iota(edge_order.begin(), edge_order.end(), 0);
  std::sort(edge_order.begin(), edge_order.end(), [this](int32_t a, int32_t b) {
    const DataEdge& x = data_edges_[a];
    const DataEdge& y = data_edges_[b];
    if (x.src != y.src) return x.src < y.src;
    if (x.src_output != y.src_output) return x.src_output < y.src_output;
    if (x.dst != y.dst) return x.dst < y.dst;
    return a < b;
  });
  std::vector<std::pair<int32_t, int32_t>> pairs;
  pairs.reserve(data_edges_.size());
  for (int32_t e : edge_order) pairs.emplace_back(data_edges_[e].src, e);
  BuildCsr(n, pairs, out_data_offsets_, out_data_);
  pairs.clear();
  for (int32_t e = 0; e < static_cast<int32_t>(data_edges_.size()); ++e) pairs.emplace_back(data_edges_[e].dst, e);
  BuildCsr(n, pairs, in_data_offsets_, in_data_);
  pairs.clear();
  for (const ControlEdge& e : control_edges_) pairs.emplace_back(e.src, e.dst);
  BuildCsr(n, pairs, control_out_offsets_, control_out_);
  pairs.clear();
  for (const ControlEdge& e : control_edges_) pairs.emplace_back(e.dst, e.src);
  BuildCsr(n, pairs, control_in_offsets_, control_in_);

  // Topological order (Kahn), stable in op index so that equal graphs give
  // equal orders.
  std::vector<int32_t> pending(n, 0);
  for (const DataEdge& e : data_edges_) ++pending[e.dst];
  for (const ControlEdge& e : control_edges_) ++pending[e.dst];
  topological_order_.clear();
  topological_order_.reserve(n);
  for (int32_t i = 0; i < n; ++i) {
    if (pending[i] == 0) topological_order_.push_back(i);
  }
  for (size_t head = 0; head < topological_order_.size(); ++head) {
    int32_t v = topological_order_[head];
    auto release = [&](int32_t w) {
      if (--pending[w] == 0) topological_order_.push_back(w);
    };
    for (int32_t e : out_data_edges(v)) release(data_edges_[e].dst);
    for (int32_t w : control_successors(v)) release(w);
  }
  if (static_cast<int32_t>(topological_order_.size()) != n) {
    // Name an op that is on a cycle, not just downstream of one: walk
    // backwards through unfinished predecessors until an op repeats.
    int32_t v = 0;
    while (pending[v] == 0) ++v;
    std::vector<char> seen(n, 0);
    while (!seen[v]) {
      seen[v] = 1;
      int32_t next = -1;
      for (int32_t e : in_data_edges(v)) {
        if (pending[data_edges_[e].src] > 0) next = data_edges_[e].src;
      }
      for (int32_t u : control_predecessors(v)) {
        if (pending[u] > 0) next = u;
      }
      assert(next >= 0);
      v = next;
    }
    throw Error(where + "the graph has a cycle through " + Describe(v));
  }
  finalized_ = true;
}

int32_t Graph::FindOp(std::string_view name) const {
  assert(finalized_);
  auto it = std::lower_bound(ops_by_name_.begin(), ops_by_name_.end(), name,
                             [this](int32_t a, std::string_view key) { return ops_[a].name < key; });
  if (it == ops_by_name_.end() || ops_[*it].name != name) return -1;
  return *it;
}

double Graph::total_flops() const {
  double total = 0;
  for (const Op& op : ops_) total += op.flops;
  return total;
}

int64_t Graph::total_persistent_bytes() const {
  int64_t total = 0;
  for (const Op& op : ops_) total += op.persistent_bytes;
  return total;
}

}  // namespace devplace
