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

// How error messages name an op.
std::string DescribeOp(const Op& op) { return "op " + std::to_string(op.id) + " ('" + ForMessage(op.name) + "')"; }

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

std::string Graph::Describe(int32_t op) const { return DescribeOp(ops_[op]); }

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

// Finalize's checks read only the graph's public view, so they live here as
// functions of it. Each throws Error prefixed by `where` (the source).

// Counts fit the int32 indices used everywhere downstream; the graph's own
// fields are valid.
void CheckGraphFields(const Graph& graph, const std::string& where) {
  constexpr size_t kMaxItems = std::numeric_limits<int32_t>::max();
  if (graph.ops().size() >= kMaxItems || graph.data_edges().size() >= kMaxItems ||
      graph.control_edges().size() >= kMaxItems) {
    throw Error(where + "more than 2^31 - 1 ops or edges");
  }
  if (!IsValidUtf8(graph.name)) throw Error(where + "the graph's name '" + ForMessage(graph.name) + "' is not valid UTF-8");
  if (graph.expert_stages < 0) throw Error(where + "negative expert_stages " + std::to_string(graph.expert_stages));
}

void CheckUniqueIds(const Graph& graph, const std::string& where) {
  std::map<int64_t, int32_t> by_id;
  for (int32_t i = 0; i < graph.num_ops(); ++i) {
    auto [it, inserted] = by_id.emplace(graph.op(i).id, i);
    if (!inserted) {
      throw Error(where + "duplicate op id " + std::to_string(graph.op(i).id) + " ('" +
                  ForMessage(graph.op(it->second).name) + "' and '" + ForMessage(graph.op(i).name) + "')");
    }
  }
}

// Op indices sorted by name, once every name is known to be non-empty and
// unique.
std::vector<int32_t> OpsSortedByName(const Graph& graph, const std::string& where) {
  std::vector<int32_t> by_name(graph.num_ops());
  std::iota(by_name.begin(), by_name.end(), 0);
  std::sort(by_name.begin(), by_name.end(),
            [&graph](int32_t a, int32_t b) { return graph.op(a).name < graph.op(b).name; });
  for (int32_t i = 0; i < graph.num_ops(); ++i) {
    const Op& op = graph.op(by_name[i]);
    if (op.name.empty()) throw Error(where + "op " + std::to_string(op.id) + " has an empty name");
    if (i > 0 && graph.op(by_name[i - 1]).name == op.name) {
      throw Error(where + "duplicate op name '" + ForMessage(op.name) + "'");
    }
  }
  return by_name;
}

// Sizes are sane, and so are their sums: a total that wraps around int64
// would make an impossible graph look small. The byte total counts every
// op's byte fields and outputs, and every data edge's tensor.
struct GraphTotals {
  int64_t bytes = 0;
  double flops = 0;

  void AddBytes(int64_t more, const Op& op, const std::string& where) {
    if (__builtin_add_overflow(bytes, more, &bytes) || bytes > kMaxGraphBytes) {
      throw Error(where + DescribeOp(op) + ": the graph's byte counts add up to more than 2^60 bytes (1 EiB)");
    }
  }
};

// One op's sizes, output tensors, device kinds and expert stage.
void CheckOpFields(const Graph& graph, int32_t i, const std::string& where, GraphTotals& totals) {
  const Op& op = graph.op(i);
  auto negative = [&](const char* field) { throw Error(where + DescribeOp(op) + ": negative " + field); };
  if (!std::isfinite(op.flops)) throw Error(where + DescribeOp(op) + ": flops is not a finite number");
  if (op.flops < 0) negative("flops");
  if (op.bytes_read < 0) negative("bytes_read");
  if (op.bytes_written < 0) negative("bytes_written");
  if (op.persistent_bytes < 0) negative("persistent_bytes");
  if (op.temporary_bytes < 0) negative("temporary_bytes");
  for (int64_t bytes : {op.bytes_read, op.bytes_written, op.persistent_bytes, op.temporary_bytes}) {
    totals.AddBytes(bytes, op, where);
  }
  for (const TensorSpec& t : op.outputs) {
    if (t.bytes < 0) negative("output bytes");
    if (t.aliases_persistent && t.bytes > op.persistent_bytes) {
      throw Error(where + DescribeOp(op) + ": an output aliases persistent memory larger than the op's persistent_bytes");
    }
    for (int64_t d : t.shape) {
      if (d < 0) negative("output dimension");
    }
    totals.AddBytes(t.bytes, op, where);
  }
  totals.flops += op.flops;
  if (!std::isfinite(totals.flops)) {
    throw Error(where + DescribeOp(op) + ": the graph's flops add up to more than a double holds");
  }
  if ((op.device_kinds & kAllDeviceKinds) == 0) throw Error(where + DescribeOp(op) + ": no device kind can run it");
  if (graph.expert_stages > 0 && (op.expert_stage < kExpertHost || op.expert_stage >= graph.expert_stages)) {
    throw Error(where + DescribeOp(op) + ": expert_stage " + std::to_string(op.expert_stage) + " is outside 0.." +
                std::to_string(graph.expert_stages - 1) + " (or -1 for the host)");
  }
}

// Edges point at real ops and outputs, and not back at their own op.
void CheckEdges(const Graph& graph, const std::string& where, GraphTotals& totals) {
  const int32_t n = graph.num_ops();
  for (const DataEdge& e : graph.data_edges()) {
    if (e.dst < 0 || e.dst >= n) throw Error(where + "data edge into a missing op (index " + std::to_string(e.dst) + ")");
    const Op& dst = graph.op(e.dst);
    if (e.src < 0 || e.src >= n) throw Error(where + DescribeOp(dst) + ": input from a missing op");
    const Op& src = graph.op(e.src);
    if (e.src_output < 0 || e.src_output >= static_cast<int32_t>(src.outputs.size())) {
      throw Error(where + DescribeOp(dst) + ": input from output " + std::to_string(e.src_output) + " of " +
                  DescribeOp(src) + ", which has " + std::to_string(src.outputs.size()) + " outputs");
    }
    if (e.src == e.dst) throw Error(where + DescribeOp(dst) + ": consumes its own output (a cycle)");
    // A tensor may be copied once per consumer, so each edge counts.
    totals.AddBytes(src.outputs[e.src_output].bytes, dst, where);
  }
  for (const ControlEdge& e : graph.control_edges()) {
    if (e.dst < 0 || e.dst >= n) throw Error(where + "control edge into a missing op (index " + std::to_string(e.dst) + ")");
    if (e.src < 0 || e.src >= n) throw Error(where + DescribeOp(graph.op(e.dst)) + ": control input from a missing op");
    if (e.src == e.dst) throw Error(where + DescribeOp(graph.op(e.dst)) + ": control input from itself (a cycle)");
  }
}

// Co-location groups can run on at least one device kind.
void CheckColocationGroups(const Graph& graph, const std::string& where) {
  std::map<std::string, DeviceKindMask> group_kinds;
  for (const Op& op : graph.ops()) {
    if (op.colocation_group.empty()) continue;
    auto [it, inserted] = group_kinds.emplace(op.colocation_group, op.device_kinds);
    it->second &= op.device_kinds;
  }
  for (const Op& op : graph.ops()) {
    if (!op.colocation_group.empty() && group_kinds[op.colocation_group] == 0) {
      throw Error(where + "co-location group '" + ForMessage(op.colocation_group) +
                  "' has no device kind that can run all its ops (" + DescribeOp(op) + " is one of them)");
    }
  }
}

// (src, edge) for every data edge, sorted by (src, src_output, dst): a
// tensor's consumers stay together.
std::vector<std::pair<int32_t, int32_t>> DataEdgesBySource(const std::vector<DataEdge>& edges) {
  std::vector<int32_t> edge_order(edges.size());
  std::iota(edge_order.begin(), edge_order.end(), 0);
  std::sort(edge_order.begin(), edge_order.end(), [&edges](int32_t a, int32_t b) {
    const DataEdge& x = edges[a];
    const DataEdge& y = edges[b];
    if (x.src != y.src) return x.src < y.src;
    if (x.src_output != y.src_output) return x.src_output < y.src_output;
    if (x.dst != y.dst) return x.dst < y.dst;
    return a < b;
  });
  std::vector<std::pair<int32_t, int32_t>> pairs;
  pairs.reserve(edges.size());
  for (int32_t e : edge_order) pairs.emplace_back(edges[e].src, e);
  return pairs;
}

// (dst, edge) for every data edge, in edge order.
std::vector<std::pair<int32_t, int32_t>> DataEdgesByDestination(const std::vector<DataEdge>& edges) {
  std::vector<std::pair<int32_t, int32_t>> pairs;
  for (int32_t e = 0; e < static_cast<int32_t>(edges.size()); ++e) pairs.emplace_back(edges[e].dst, e);
  return pairs;
}

// (one end, the other end) of every control edge: (src, dst) for
// successors, (dst, src) for predecessors.
std::vector<std::pair<int32_t, int32_t>> ControlEdgeEnds(const std::vector<ControlEdge>& edges, bool from_src) {
  std::vector<std::pair<int32_t, int32_t>> pairs;
  for (const ControlEdge& e : edges) pairs.emplace_back(from_src ? e.src : e.dst, from_src ? e.dst : e.src);
  return pairs;
}

// Topological order (Kahn), stable in op index so that equal graphs give
// equal orders. `pending` starts as each op's number of inputs (data and
// control); an op left with pending inputs is on or after a cycle.
std::vector<int32_t> KahnOrder(const Graph& graph, std::vector<int32_t>& pending) {
  std::vector<int32_t> order;
  order.reserve(graph.num_ops());
  for (int32_t i = 0; i < graph.num_ops(); ++i) {
    if (pending[i] == 0) order.push_back(i);
  }
  for (size_t head = 0; head < order.size(); ++head) {
    int32_t v = order[head];
    auto release = [&](int32_t w) {
      if (--pending[w] == 0) order.push_back(w);
    };
    for (int32_t e : graph.out_data_edges(v)) release(graph.data_edges()[e].dst);
    for (int32_t w : graph.control_successors(v)) release(w);
  }
  return order;
}

// An op that is on a cycle, not just downstream of one: from the first op
// Kahn left, walk backwards through unfinished predecessors until an op
// repeats.
int32_t OpOnCycle(const Graph& graph, const std::vector<int32_t>& pending) {
  int32_t v = 0;
  while (pending[v] == 0) ++v;
  std::vector<char> seen(graph.num_ops(), 0);
  while (!seen[v]) {
    seen[v] = 1;
    int32_t next = -1;
    for (int32_t e : graph.in_data_edges(v)) {
      if (pending[graph.data_edges()[e].src] > 0) next = graph.data_edges()[e].src;
    }
    for (int32_t u : graph.control_predecessors(v)) {
      if (pending[u] > 0) next = u;
    }
    assert(next >= 0);
    v = next;
  }
  return v;
}

}  // namespace

void Graph::Finalize(const std::string& source) {
  const std::string where = ForMessage(source) + ": ";
  CheckGraphFields(*this, where);
  const int32_t n = num_ops();
  CheckUniqueIds(*this, where);
  ops_by_name_ = OpsSortedByName(*this, where);
  GraphTotals totals;
  for (int32_t i = 0; i < n; ++i) {
    CheckOpText(i, where);
    CheckOpFields(*this, i, where, totals);
  }
  CheckEdges(*this, where, totals);
  CheckColocationGroups(*this, where);

  // The graph is valid: its adjacency lists, then its order.
  BuildCsr(n, DataEdgesBySource(data_edges_), out_data_offsets_, out_data_);
  BuildCsr(n, DataEdgesByDestination(data_edges_), in_data_offsets_, in_data_);
  BuildCsr(n, ControlEdgeEnds(control_edges_, /*from_src=*/true), control_out_offsets_, control_out_);
  BuildCsr(n, ControlEdgeEnds(control_edges_, /*from_src=*/false), control_in_offsets_, control_in_);

  std::vector<int32_t> pending(n, 0);
  for (const DataEdge& e : data_edges_) ++pending[e.dst];
  for (const ControlEdge& e : control_edges_) ++pending[e.dst];
  topological_order_ = KahnOrder(*this, pending);
  if (static_cast<int32_t>(topological_order_.size()) != n) {
    throw Error(where + "the graph has a cycle through " + Describe(OpOnCycle(*this, pending)));
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
