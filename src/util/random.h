// A small, portable, seedable random generator. std::normal_distribution's
// algorithm differs between standard libraries, so devplace draws its own
// numbers to keep "same seed, same result" true everywhere.
#pragma once

#include <cmath>
#include <cstdint>

namespace devplace {

class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}

  // SplitMix64: passes BigCrush, one add and three multiplies per draw.
  uint64_t NextU64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }

  // Uniform integer in [0, n).
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : NextU64() % n; }

  // Standard normal by Box-Muller (one value per call; simplicity over speed).
  double Normal() {
    double u1 = Uniform();
    double u2 = Uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  uint64_t state() const { return state_; }
  void set_state(uint64_t state) { state_ = state; }

 private:
  uint64_t state_;
};

}  // namespace devplace
