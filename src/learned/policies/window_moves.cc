#include "learned/policies/window_moves.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace devplace {

WindowMoves::WindowMoves(const UnitDecisions& units, double share) : units_(&units), share_(share) {
  const std::vector<float>& position = units.features().unit_position;
  units_by_position_.resize(units.num_units());
  std::iota(units_by_position_.begin(), units_by_position_.end(), 0);
  // Ties (none in practice) by unit index, so the order is the same anywhere.
  std::stable_sort(units_by_position_.begin(), units_by_position_.end(),
                   [&](int32_t a, int32_t b) { return position[a] < position[b]; });
}

int64_t WindowMoves::MovedSamples(int64_t samples) const {
  if (units_->fast_devices().size() < 2 || units_->num_units() < 2) return 0;  // nowhere to move to
  return std::clamp<int64_t>(std::llround(share_ * static_cast<double>(samples)), 0, samples);
}

void WindowMoves::Apply(std::vector<int32_t>& decision, Random& random) const {
  const std::vector<int32_t>& fast = units_->fast_devices();
  const int64_t U = static_cast<int64_t>(units_by_position_.size());
  if (fast.size() < 2 || U < 2 || static_cast<int64_t>(decision.size()) != U) return;
  const double longest = std::max(1.0, 0.5 * static_cast<double>(U));
  const int64_t length = std::clamp<int64_t>(static_cast<int64_t>(std::exp(random.Uniform() * std::log(longest))), 1, U);
  const int64_t first = static_cast<int64_t>(random.Below(static_cast<uint64_t>(U - length + 1)));
  // A device other than the first unit's, so the move is never empty there.
  const int32_t current = decision[units_by_position_[first]];
  std::vector<int32_t> others;
  for (int32_t d : fast) {
    if (d != current) others.push_back(d);
  }
  const int32_t target = others[random.Below(others.size())];
  for (int64_t i = first; i < first + length; ++i) {
    const int32_t u = units_by_position_[i];
    if (units_->Allowed(u, target)) decision[u] = target;
  }
}

}  // namespace devplace
