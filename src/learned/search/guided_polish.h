// guided's polish: the last share of its budget as a greedy descent from
// the best placement found. The chain returns to its best once, takes no
// loss from then on, and each move is the candidate the screen predicts
// best among those not yet tried since the last improvement, so that the
// descent does not spend evaluations on a move it has just seen fail.
// Torch-free. It has no state in a checkpoint: a guided run's checkpoint is
// where it stood before its polish (learned/search/guided_search.cc).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

namespace devplace {

// A candidate move as the polish tells moves apart: a unit (an index into
// MovableUnits::units), the device it goes to, and the unit moved with it
// (-1: none).
struct PolishMove {
  int32_t unit = 0;
  int32_t device = 0;
  int32_t partner = -1;
  auto operator<=>(const PolishMove&) const = default;
};

class GreedyPolish {
 public:
  // `share`: the share of the budget at its end that the polish takes (0: none).
  explicit GreedyPolish(double share) : share_(share) {}

  bool active() const { return active_; }
  // True once: when the search has spent `spent` (0 to 1) of its budget
  // and the polish is due to begin.
  bool StartsNow(double spent);

  // The index of the highest score among the moves not tried since the last
  // improvement; among all of them when every one was. `scores` is
  // parallel to `moves`, which is not empty.
  size_t Pick(const std::vector<PolishMove>& moves, const std::vector<float>& scores) const;
  // The move was tried; `improved`: it made the chain's placement better.
  void Record(const PolishMove& move, bool improved);

 private:
  double share_;
  bool active_ = false;
  std::set<PolishMove> tried_;
};

}  // namespace devplace
