// The training step of a model as a DAG of ops: what each op computes, the
// tensors it produces, the memory it holds, where it may run, and which ops
// must share its device. Everything else in devplace reads this.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace devplace {

enum class DeviceKind : uint8_t { kCpu = 0, kGpu = 1 };
inline constexpr int kNumDeviceKinds = 2;

// A set of device kinds, one bit per DeviceKind.
using DeviceKindMask = uint8_t;
inline constexpr DeviceKindMask kAllDeviceKinds = 0b11;
inline constexpr DeviceKindMask MaskOf(DeviceKind kind) { return DeviceKindMask(1u << static_cast<int>(kind)); }

const char* DeviceKindName(DeviceKind kind);
std::optional<DeviceKind> ParseDeviceKind(std::string_view name);

enum class Phase : uint8_t { kForward = 0, kBackward = 1, kUpdate = 2, kOther = 3 };
inline constexpr int kNumPhases = 4;
const char* PhaseName(Phase phase);
std::optional<Phase> ParsePhase(std::string_view name);

// Bytes per element of a dtype name ("float32", "int64", ...); 0 if unknown.
int64_t DtypeBytes(std::string_view dtype);

struct TensorSpec {
  std::vector<int64_t> shape;
  std::string dtype = "float32";
  int64_t bytes = 0;
  // The tensor is a view of its op's persistent memory (a variable's value):
  // producing it allocates nothing new; copies sent to other devices do.
  bool aliases_persistent = false;

  // A tensor whose byte size follows from its shape and dtype. Throws Error
  // on a negative dimension or a size that does not fit in int64.
  static TensorSpec Make(std::vector<int64_t> shape, std::string dtype = "float32");

  // The bytes of `shape` elements of `element_bytes` each, or nullopt when a
  // dimension is negative or the product overflows int64.
  static std::optional<int64_t> CheckedBytes(std::span<const int64_t> shape, int64_t element_bytes);
};

// The most bytes one graph may add up to: every op's persistent, temporary,
// read, written and output bytes plus the bytes of every data edge (2^60, an
// exbibyte). Far above any machine, and low enough that every sum devplace
// forms from these (a device's memory, the bytes between groups, a copy
// volume) stays clear of int64 overflow.
inline constexpr int64_t kMaxGraphBytes = int64_t{1} << 60;

struct Op {
  int64_t id = 0;    // as written in the graph file; unique within a graph
  std::string name;  // unique within a graph; placement files refer to ops by name
  std::string type;  // "MatMul", "Conv2D", ...
  Phase phase = Phase::kForward;
  double flops = 0;
  int64_t bytes_read = 0;     // memory traffic, for the roofline
  int64_t bytes_written = 0;
  std::vector<TensorSpec> outputs;
  int64_t persistent_bytes = 0;  // parameters and optimizer slots, held all step
  int64_t temporary_bytes = 0;   // scratch held only while the op runs
  DeviceKindMask device_kinds = kAllDeviceKinds;
  std::string colocation_group;  // ops sharing a non-empty group share a device
  // The human expert's choice, as a model's generator knows it: the stage
  // (0 .. Graph::expert_stages - 1) of a layer-wise split, or kExpertHost
  // for ops the expert keeps on the CPU. See ExpertPlacement.
  int32_t expert_stage = 0;
};

inline constexpr int32_t kExpertHost = -1;

// Output `src_output` of op `src` feeds op `dst`. Indices are positions in
// Graph::ops(), not file ids.
struct DataEdge {
  int32_t src = 0;
  int32_t src_output = 0;
  int32_t dst = 0;
};

// `dst` may start only after `src` finished; no data moves.
struct ControlEdge {
  int32_t src = 0;
  int32_t dst = 0;
};

class Graph {
 public:
  std::string name;
  // How many stages the expert split has; 0 when the graph has none.
  int32_t expert_stages = 0;

  // Building. Indices returned by AddOp are dense and stable.
  int32_t AddOp(Op op);
  void AddDataEdge(int32_t src, int32_t src_output, int32_t dst);
  void AddControlEdge(int32_t src, int32_t dst);

  // Validates the graph and builds its adjacency and topological order.
  // Throws Error naming `source` and the offending op: duplicate ids or
  // names, names that are not UTF-8, negative or non-finite sizes, totals
  // above kMaxGraphBytes, dangling edges, cycles, ops no device can run,
  // co-location groups no single device kind can run.
  void Finalize(const std::string& source = "graph");
  bool finalized() const { return finalized_; }

  int32_t num_ops() const { return static_cast<int32_t>(ops_.size()); }
  const Op& op(int32_t index) const { return ops_[index]; }
  // For builders filling in fields after AddOp; call Finalize again after.
  Op& mutable_op(int32_t index) {
    finalized_ = false;
    return ops_[index];
  }
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<DataEdge>& data_edges() const { return data_edges_; }
  const std::vector<ControlEdge>& control_edges() const { return control_edges_; }

  // Adjacency, valid after Finalize. Out-edges of an op are sorted by
  // (src_output, dst), so the consumers of one tensor are contiguous.
  std::span<const int32_t> out_data_edges(int32_t op) const { return Slice(out_data_offsets_, out_data_, op); }
  std::span<const int32_t> in_data_edges(int32_t op) const { return Slice(in_data_offsets_, in_data_, op); }
  std::span<const int32_t> control_successors(int32_t op) const { return Slice(control_out_offsets_, control_out_, op); }
  std::span<const int32_t> control_predecessors(int32_t op) const { return Slice(control_in_offsets_, control_in_, op); }
  const std::vector<int32_t>& topological_order() const { return topological_order_; }

  // Index of the op called `name`, or -1.
  int32_t FindOp(std::string_view name) const;

  double total_flops() const;
  int64_t total_persistent_bytes() const;

 private:
  static std::span<const int32_t> Slice(const std::vector<int32_t>& offsets, const std::vector<int32_t>& items,
                                        int32_t op) {
    return {items.data() + offsets[op], items.data() + offsets[op + 1]};
  }
  std::string Describe(int32_t op) const;
  // Throws Error unless the op's strings are UTF-8, as the JSON it may be
  // written to requires.
  void CheckOpText(int32_t op, const std::string& where) const;

  std::vector<Op> ops_;
  std::vector<DataEdge> data_edges_;
  std::vector<ControlEdge> control_edges_;

  bool finalized_ = false;
  std::vector<int32_t> out_data_offsets_, out_data_;
  std::vector<int32_t> in_data_offsets_, in_data_;
  std::vector<int32_t> control_out_offsets_, control_out_;
  std::vector<int32_t> control_in_offsets_, control_in_;
  std::vector<int32_t> topological_order_;
  std::vector<int32_t> ops_by_name_;  // op indices sorted by name, for FindOp
};

}  // namespace devplace
