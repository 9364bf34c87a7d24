#include "learned/search/guided_polish.h"

namespace devplace {

bool GreedyPolish::StartsNow(double spent) {
  if (active_ || share_ <= 0 || spent < 1 - share_) return false;
  active_ = true;
  tried_.clear();
  return true;
}

size_t GreedyPolish::Pick(const std::vector<PolishMove>& moves, const std::vector<float>& scores) const {
  size_t best = moves.size(), best_any = 0;
  for (size_t k = 0; k < moves.size(); ++k) {
    if (scores[k] > scores[best_any]) best_any = k;
    if (tried_.count(moves[k])) continue;
    if (best == moves.size() || scores[k] > scores[best]) best = k;
  }
  return best == moves.size() ? best_any : best;
}

void GreedyPolish::Record(const PolishMove& move, bool improved) {
  if (improved) {
    tried_.clear();
  } else {
    tried_.insert(move);
  }
}

}  // namespace devplace
