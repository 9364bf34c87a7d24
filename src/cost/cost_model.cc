#include "cost/cost_model.h"

#include <algorithm>

namespace devplace {

EfficiencyTable EfficiencyTable::Default() {
  EfficiencyTable table;
  const int cpu = static_cast<int>(DeviceKind::kCpu);
  const int gpu = static_cast<int>(DeviceKind::kGpu);
  // Dense matmuls reach ~70% of peak on GPUs with cuBLAS and ~50% on CPUs
  // with Eigen/MKL; convolutions somewhat less (cuDNN ~55%, CPU ~35%), their
  // gradients less again.
  for (const char* type : {"MatMul", "BatchMatMul", "MatMulGrad", "Einsum"}) {
    table.compute_by_type[gpu][type] = 0.7;
    table.compute_by_type[cpu][type] = 0.5;
  }
  for (const char* type : {"Conv2D", "Conv1D", "Conv3D", "DepthwiseConv2dNative"}) {
    table.compute_by_type[gpu][type] = 0.55;
    table.compute_by_type[cpu][type] = 0.35;
  }
  for (const char* type : {"Conv2DBackpropInput", "Conv2DBackpropFilter", "Conv1DBackpropInput",
                           "Conv1DBackpropFilter", "DepthwiseConv2dNativeBackpropInput",
                           "DepthwiseConv2dNativeBackpropFilter"}) {
    table.compute_by_type[gpu][type] = 0.45;
    table.compute_by_type[cpu][type] = 0.3;
  }
  return table;
}

double EfficiencyTable::Compute(const std::string& op_type, DeviceKind kind) const {
  const auto& by_type = compute_by_type[static_cast<int>(kind)];
  auto it = by_type.find(op_type);
  return it == by_type.end() ? default_compute[static_cast<int>(kind)] : it->second;
}

CostModel::CostModel(const Cluster& cluster, OpTimeTable measured, EfficiencyTable efficiency)
    : cluster_(&cluster), measured_(std::move(measured)), efficiency_(std::move(efficiency)) {}

double CostModel::OpTimeUs(const Op& op, int32_t device) const {
  if (!CanRun(op, device)) return kCannotRun;
  const Device& d = cluster_->devices[device];
  if (auto measured = measured_.Find(op, d.kind)) return *measured;
  const int kind = static_cast<int>(d.kind);
  double compute_s = op.flops / (d.peak_flops_per_s * efficiency_.Compute(op.type, d.kind));
  int64_t traffic_bytes = op.bytes_read + op.bytes_written;
  if (traffic_bytes == 0) {
    // Without explicit traffic, an op at least writes its outputs.
    for (const TensorSpec& t : op.outputs) traffic_bytes += t.bytes;
  }
  double memory_s = static_cast<double>(traffic_bytes) / (d.memory_bandwidth_bytes_per_s * efficiency_.memory[kind]);
  return std::max(compute_s, memory_s) * 1e6 + d.launch_overhead_us;
}

double CostModel::TransferTimeUs(int32_t src, int32_t dst, int64_t bytes) const {
  double total_us = 0;
  for (const Hop& hop : cluster_->Route(src, dst)) total_us += cluster_->HopTimeUs(hop, bytes);
  return total_us;
}

}  // namespace devplace
