#include "learned/policies/policy.h"

namespace devplace {

std::vector<int64_t> RowsOfSampled(const std::vector<Decision>& decisions, const std::vector<Decision>& sampled) {
  std::vector<int64_t> rows;
  rows.reserve(decisions.size());
  size_t next = 0;
  for (const Decision& decision : decisions) {
    while (next < sampled.size() && sampled[next] != decision) ++next;
    if (next == sampled.size()) return {};
    rows.push_back(static_cast<int64_t>(next++));
  }
  return rows;
}

}  // namespace devplace
