// The stand-in kernel, and what every kernel shares: outputs of the graph's
// shapes, dtypes, and the seeded values of sources.
#include <algorithm>
#include <cmath>

#include "exec/kernels/kernel.h"
#include "util/fnv1a.h"
#include "util/random.h"

namespace devplace {
namespace {

constexpr int64_t kStandInSide = 128;  // its matmuls' largest side

}  // namespace

at::ScalarType ScalarTypeOf(std::string_view dtype, bool* known) {
  struct Entry {
    std::string_view name;
    at::ScalarType type;
  };
  static constexpr Entry kTypes[] = {
      {"float32", at::kFloat}, {"float", at::kFloat}, {"float64", at::kDouble},    {"double", at::kDouble},
      {"float16", at::kHalf},  {"half", at::kHalf},   {"bfloat16", at::kBFloat16}, {"int32", at::kInt},
      {"int64", at::kLong},    {"int16", at::kShort}, {"int8", at::kChar},         {"uint8", at::kByte},
      {"bool", at::kBool},
  };
  for (const Entry& e : kTypes) {
    if (e.name == dtype) {
      if (known != nullptr) *known = true;
      return e.type;
    }
  }
  if (known != nullptr) *known = false;
  return at::kByte;
}

int64_t ElementsOf(const TensorSpec& spec) {
  // The graph's loader refused shapes whose count passes int64.
  return TensorSpec::CheckedBytes(spec.shape, 1).value_or(0);
}

std::vector<int64_t> TorchShapeOf(const TensorSpec& spec) {
  bool known = false;
  ScalarTypeOf(spec.dtype, &known);
  // A dtype torch lacks: the tensor as the bytes the graph says it has.
  if (!known) return {spec.bytes};
  return spec.shape;
}

at::Tensor& KernelCall::Out(int32_t i) {
  at::Tensor& out = outputs[i];
  if (!out.defined()) {
    const TensorSpec& spec = op.outputs[i];
    out = at::empty(TorchShapeOf(spec), at::TensorOptions().dtype(ScalarTypeOf(spec.dtype)).device(device));
  }
  return out;
}

at::Tensor SeededTensor(const TensorSpec& spec, uint64_t seed, std::string_view name, at::Device device) {
  Random random(seed ^ Fnv1a64(name));
  const at::ScalarType type = ScalarTypeOf(spec.dtype);
  const std::vector<int64_t> shape = TorchShapeOf(spec);
  at::Tensor cpu;
  if (at::isFloatingType(type)) {
    cpu = at::empty(shape, at::kFloat);
    const int64_t last = spec.shape.empty() ? 1 : std::max<int64_t>(1, spec.shape.back());
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(last)));
    float* p = cpu.data_ptr<float>();
    for (int64_t k = 0, n = cpu.numel(); k < n; ++k) p[k] = scale * static_cast<float>(2 * random.Uniform() - 1);
  } else {
    cpu = at::empty(shape, at::kLong);
    int64_t* p = cpu.data_ptr<int64_t>();
    const uint64_t range = type == at::kBool ? 2 : 32768;
    for (int64_t k = 0, n = cpu.numel(); k < n; ++k) p[k] = static_cast<int64_t>(random.Below(range));
  }
  return cpu.to(at::TensorOptions().dtype(type).device(device));
}

void RunStandIn(KernelCall& call) {
  // Read every input: a sum is a pass over its bytes.
  for (const at::Tensor& input : call.inputs) {
    if (input.defined() && input.numel() > 0) (void)input.sum();
  }
  // The op's FLOPs as square matmuls on scratch that stays in cache.
  thread_local at::Tensor a, b, c;
  if (!a.defined() || a.device() != call.device) {
    const auto options = at::TensorOptions().dtype(at::kFloat).device(call.device);
    a = at::full({kStandInSide, kStandInSide}, 0.01, options);
    b = at::full({kStandInSide, kStandInSide}, 0.01, options);
    c = at::empty({kStandInSide, kStandInSide}, options);
  }
  double flops = call.op.flops;
  while (flops >= 2.0) {
    const int64_t side = std::clamp<int64_t>(static_cast<int64_t>(std::cbrt(flops / 2.0)), 1, kStandInSide);
    at::Tensor product = c.narrow(0, 0, side).narrow(1, 0, side);
    at::mm_out(product, a.narrow(0, 0, side).narrow(1, 0, side), b.narrow(0, 0, side).narrow(1, 0, side));
    flops -= 2.0 * static_cast<double>(side * side * side);
  }
  // Write every output.
  for (int32_t i = 0; i < static_cast<int32_t>(call.outputs.size()); ++i) {
    at::Tensor& out = call.Out(i);
    if (at::isFloatingType(out.scalar_type())) {
      out.fill_(0.01);
    } else {
      out.zero_();
    }
  }
}

}  // namespace devplace
