// guided's polish: the last share of its budget as greedy descents. The
// first starts from the best placement found; each move is the candidate
// the screen predicts best among those not yet tried since the last
// improvement, and no loss is taken, so that a descent does not spend
// evaluations on a move it has just seen fail. A descent ends when every
// candidate drawn has been tried since its last improvement (a local
// optimum of the moves guided makes): the search then goes on as before
// the polish, and the next new best it finds is polished in turn, so the
// share is never spent repeating moves already tried.
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

  // A descent is under way: moves are Pick's, and no loss is taken.
  bool active() const { return active_; }
  // The polish's share of the budget has begun (a descent may be under way
  // or the search between two).
  bool begun() const { return begun_; }
  // True once: when the search has spent `spent` (0 to 1) of its budget
  // and the polish is due to begin; the first descent begins.
  bool StartsNow(double spent);

  // The index of the highest score among the moves not tried since the last
  // improvement. When every one was, the descent has ended: returns
  // moves.size(), and active() is false until Resume. `scores` is parallel
  // to `moves`, which is not empty.
  size_t Pick(const std::vector<PolishMove>& moves, const std::vector<float>& scores);
  // The move was tried; `improved`: it made the chain's placement better.
  void Record(const PolishMove& move, bool improved);
  // The next descent begins (from a new best); forgets what was tried.
  void Resume();

  int64_t descents() const { return descents_; }
  int64_t picks() const { return picks_; }

 private:
  double share_;
  bool active_ = false;
  bool begun_ = false;
  std::set<PolishMove> tried_;
  int64_t descents_ = 0;
  int64_t picks_ = 0;
};

}  // namespace devplace
