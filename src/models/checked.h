// Checked integer arithmetic for the model generators: every size a
// generator computes from its parameters goes through these, so that a
// parameter combination too large for the graph's integer fields is an
// Error naming what overflowed rather than a wrapped, silently wrong graph.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "util/error.h"

namespace devplace::models {

// The largest tensor a generated graph may hold: 1 TiB. Far above any real
// model's tensor, and low enough that sums over millions of ops stay far from
// int64 overflow in the simulator's memory accounting.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;

// The most ops a generator may emit. The parameter ranges (docs/models.md)
// keep every model well below it; it is the backstop that bounds memory and
// build time whatever the combination.
inline constexpr int64_t kMaxGeneratedOps = 2'000'000;

// `value` as an int32 (an expert stage, a stage count), or an Error naming
// `what`.
inline int32_t ToInt32(int64_t value, const char* what) {
  if (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max()) {
    throw Error(std::string(what) + " " + std::to_string(value) + " does not fit in 32 bits");
  }
  return static_cast<int32_t>(value);
}

inline int64_t CheckedMul(int64_t a, int64_t b, const char* what) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) {
    throw Error(std::string(what) + ": " + std::to_string(a) + " x " + std::to_string(b) + " overflows 64 bits");
  }
  return out;
}

inline int64_t CheckedAdd(int64_t a, int64_t b, const char* what) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) {
    throw Error(std::string(what) + ": " + std::to_string(a) + " + " + std::to_string(b) + " overflows 64 bits");
  }
  return out;
}

// The number of elements of `shape`, checked.
inline int64_t CheckedElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n = CheckedMul(n, d, "tensor size");
  return n;
}

}  // namespace devplace::models
