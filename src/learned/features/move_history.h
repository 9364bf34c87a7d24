// What a search has already seen of a move: the reward it last observed for
// moving a unit onto a device, how long ago, and the same for the move back
// (the unit onto the device it is on now). A move's reward changes slowly
// as the placement around it drifts, so the last one predicts the next far
// better than features of the state alone (BENCHMARKS.md, issue 49): a
// learned proposal that reads it stops re-trying moves that just failed.
// Rewards are guided's (bounded, in percent of step time), so the features
// are ratios like move_features'. No torch here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace devplace {

inline constexpr int kMoveHistoryFeatures = 5;

class MoveHistory {
 public:
  // `max_reward` bounds the rewards recorded (they are scaled by it).
  MoveHistory(int32_t units, int32_t devices, double max_reward);

  // Records that moving `unit` from `from` onto `to` at evaluation `now`
  // had `reward`.
  void Record(int32_t unit, int32_t from, int32_t to, int64_t now, double reward);

  // Appends the kMoveHistoryFeatures features of moving `unit` from `from`
  // onto `to` at evaluation `now`: seen before (0/1), the last reward over
  // the bound, log(1 + evaluations since) / 8 (at most 1), and the seen flag
  // and scaled reward of the last move of the unit from `to` onto `from`.
  void Append(int32_t unit, int32_t from, int32_t to, int64_t now, std::vector<float>& out) const;

  // What it has seen, for a checkpoint (per unit and device: when, -1 for
  // never, and the scaled reward), and back: false, and nothing changed,
  // when the sizes are not this history's or a value is out of range.
  void Save(std::vector<int64_t>& when, std::vector<float>& reward) const;
  bool Load(const std::vector<int64_t>& when, const std::vector<float>& reward);

 private:
  struct Seen {
    int64_t when = -1;
    float reward = 0;
  };
  const Seen& At(int32_t unit, int32_t device) const { return seen_[static_cast<size_t>(unit) * devices_ + device]; }
  int32_t devices_;
  double max_reward_;
  std::vector<Seen> seen_;  // per unit and target device
};

}  // namespace devplace
