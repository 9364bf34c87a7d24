#include "graph/canonical_order.h"

#include <algorithm>
#include <string>

namespace devplace {
namespace {

// Name order with runs of digits compared as numbers ("cell_2" before
// "cell_10"), so that an unrolled network's steps keep their order.
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = a[i] >= '0' && a[i] <= '9', db = b[j] >= '0' && b[j] <= '9';
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && a[ie] >= '0' && a[ie] <= '9') ++ie;
      while (je < b.size() && b[je] >= '0' && b[je] <= '9') ++je;
      size_t is = i, js = j;  // skip leading zeros, then longer is larger
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      const int c = a.compare(is, ie - is, b, js, je - js);
      if (c != 0) return c < 0;
      i = ie, j = je;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i, ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
  return a < b;  // equal but for leading zeros: still a strict order
}

}  // namespace

// A topological order that depends on the graph alone, not on the order of
// its file: ops by their height (the most ops on any path from the op to
// the end of the step), highest first, then by name. Both belong to the
// graph; an edge always goes from a higher op to a lower one, so this is a
// topological order. Height is the classic list-scheduling priority (the
// op with the longest way still to go first), and it keeps memory down: in
// an unrolled network's backward pass the last step's gradients, which the
// whole recurrence waits on, go before the earlier steps' gradients that
// would only sit in memory. Ordering ready ops by name alone doubled the
// peak memory of the large RNNLM's layer-wise split.
std::vector<int32_t> CanonicalOrder(const Graph& graph) {
  const int32_t n = graph.num_ops();
  const std::vector<int32_t>& topological = graph.topological_order();
  std::vector<int32_t> height(n, 1);
  for (auto it = topological.rbegin(); it != topological.rend(); ++it) {
    const int32_t op = *it;
    for (int32_t e : graph.out_data_edges(op)) height[op] = std::max(height[op], height[graph.data_edges()[e].dst] + 1);
    for (int32_t next : graph.control_successors(op)) height[op] = std::max(height[op], height[next] + 1);
  }
  std::vector<int32_t> order(n);
  for (int32_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    if (height[a] != height[b]) return height[a] > height[b];
    return NaturalLess(graph.op(a).name, graph.op(b).name);
  });
  return order;
}

}  // namespace devplace
