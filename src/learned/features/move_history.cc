#include "learned/features/move_history.h"

#include <algorithm>
#include <cmath>

namespace devplace {

MoveHistory::MoveHistory(int32_t units, int32_t devices, double max_reward)
    : devices_(devices), max_reward_(max_reward), seen_(static_cast<size_t>(units) * devices) {}

void MoveHistory::Record(int32_t unit, int32_t /*from*/, int32_t to, int64_t now, double reward) {
  Seen& s = seen_[static_cast<size_t>(unit) * devices_ + to];
  s.when = now;
  s.reward = static_cast<float>(std::clamp(reward / max_reward_, -1.0, 1.0));
}

void MoveHistory::Append(int32_t unit, int32_t from, int32_t to, int64_t now, std::vector<float>& out) const {
  const Seen& onto = At(unit, to);
  const Seen& back = At(unit, from);
  out.push_back(onto.when >= 0 ? 1.0f : 0.0f);
  out.push_back(onto.reward);
  out.push_back(onto.when >= 0 ? static_cast<float>(std::min(1.0, std::log1p(static_cast<double>(now - onto.when)) / 8))
                               : 1.0f);
  out.push_back(back.when >= 0 ? 1.0f : 0.0f);
  out.push_back(back.reward);
}

void MoveHistory::Save(std::vector<int64_t>& when, std::vector<float>& reward) const {
  when.clear();
  reward.clear();
  for (const Seen& s : seen_) {
    when.push_back(s.when);
    reward.push_back(s.reward);
  }
}

bool MoveHistory::Load(const std::vector<int64_t>& when, const std::vector<float>& reward) {
  if (when.size() != seen_.size() || reward.size() != seen_.size()) return false;
  for (size_t i = 0; i < when.size(); ++i) {
    if (when[i] < -1 || !(reward[i] >= -1 && reward[i] <= 1)) return false;
  }
  for (size_t i = 0; i < when.size(); ++i) seen_[i] = {when[i], reward[i]};
  return true;
}

}  // namespace devplace
