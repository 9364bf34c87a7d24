#include "learned/search/guided_polish.h"

namespace devplace {

bool GreedyPolish::StartsNow(double spent) {
  if (begun_ || share_ <= 0 || spent < 1 - share_) return false;
  begun_ = true;
  Resume();
  return true;
}

void GreedyPolish::Resume() {
  active_ = true;
  tried_.clear();
  ++descents_;
}

size_t GreedyPolish::Pick(const std::vector<PolishMove>& moves, const std::vector<float>& scores) {
  size_t best = moves.size();
  for (size_t k = 0; k < moves.size(); ++k) {
    if (tried_.count(moves[k])) continue;
    if (best == moves.size() || scores[k] > scores[best]) best = k;
  }
  if (best == moves.size()) {
    active_ = false;
  } else {
    ++picks_;
  }
  return best;
}

void GreedyPolish::Record(const PolishMove& move, bool improved) {
  if (improved) {
    tried_.clear();
  } else {
    tried_.insert(move);
  }
}

}  // namespace devplace
