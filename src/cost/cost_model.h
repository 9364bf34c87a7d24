// How long an op takes on a device and a tensor takes on a link. An op's
// time is a roofline (compute at a per-op-type fraction of peak, or memory
// traffic at a fraction of bandwidth, whichever is slower) plus the device's
// launch overhead; a measured time, where the table has one, replaces it.
// The fraction of peak depends on the op's kind (matmul, convolution, ...),
// which its type names in any of the three vocabularies devplace reads.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "cluster/cluster.h"
#include "cost/op_time_table.h"
#include "graph/graph.h"

namespace devplace {

// What an op does, as far as its speed goes. Efficiencies are per kind, so
// the same computation costs the same whichever vocabulary named it
// (TensorFlow's MatMul, ONNX's Gemm, PyTorch's aten.mm).
enum class OpKind : uint8_t {
  kMatMul = 0,               // dense products: MatMul, Gemm, aten.mm, RNN cells
  kConvolution,              // Conv2D, Conv, aten.convolution
  kConvolutionGradient,      // Conv2DBackpropInput/Filter, ConvGrad, aten.convolution_backward
  kElementwise,              // Add, Relu, Tanh, ... and their gradients
  kReduction,                // Sum, Mean, Softmax, pooling, losses
  kNormalization,            // batch and layer normalization
  kDataMovement,             // Reshape, Concat, Gather, Cast, ...: no arithmetic to speak of
  kOptimizer,                // ApplyAdam, Assign, ...: parameter updates
  kSource,                   // variables, constants, inputs
  kOther,                    // none of the above, listed so on purpose, or a type no table knows
};
inline constexpr int kNumOpKinds = 10;
const char* OpKindName(OpKind kind);

// The kind of `op_type` in the vocabularies devplace reads and writes:
// TensorFlow's (TF1 and TF2 names; the built-in models use them), ONNX's,
// with the `<Type>Grad` ops ONNX import synthesizes, and PyTorch's
// `aten.<name>` from tools/export_pytorch.py (with their `_backward`
// gradients). nullopt for a type no table lists; such an op costs as
// kOther. Every type devplace itself emits is listed, with kOther where
// that is deliberate (tests/cost_model_test.cc checks it).
std::optional<OpKind> FindOpKind(std::string_view op_type);
inline OpKind OpKindOf(std::string_view op_type) { return FindOpKind(op_type).value_or(OpKind::kOther); }

// Fraction of peak a device kind reaches, by op kind. Matmuls and
// convolutions run close to peak; the rest are usually memory-bound and
// their compute efficiency matters little.
struct EfficiencyTable {
  double compute[kNumDeviceKinds][kNumOpKinds];  // [device kind][op kind]
  double memory[kNumDeviceKinds] = {0.6, 0.8};

  // Every op kind at `cpu` / `gpu` of peak.
  EfficiencyTable(double cpu = 0.3, double gpu = 0.5);
  static EfficiencyTable Default();
  double Compute(OpKind op_kind, DeviceKind kind) const {
    return compute[static_cast<int>(kind)][static_cast<int>(op_kind)];
  }
  double Compute(std::string_view op_type, DeviceKind kind) const { return Compute(OpKindOf(op_type), kind); }
};

inline constexpr double kCannotRun = std::numeric_limits<double>::infinity();

class CostModel {
 public:
  explicit CostModel(const Cluster& cluster, OpTimeTable measured = {},
                     EfficiencyTable efficiency = EfficiencyTable::Default());

  bool CanRun(const Op& op, int32_t device) const {
    return (op.device_kinds & MaskOf(cluster_->devices[device].kind)) != 0;
  }

  // Microseconds `op` takes on `device`; kCannotRun if the device's kind
  // cannot run it.
  double OpTimeUs(const Op& op, int32_t device) const;

  // Microseconds to move `bytes` from `src` to `dst`, hop after hop, on an
  // otherwise idle cluster.
  double TransferTimeUs(int32_t src, int32_t dst, int64_t bytes) const;

  const Cluster& cluster() const { return *cluster_; }
  const OpTimeTable& measured() const { return measured_; }

 private:
  const Cluster* cluster_;
  OpTimeTable measured_;
  EfficiencyTable efficiency_;
};

}  // namespace devplace
