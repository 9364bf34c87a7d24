// dp_split: the optimal contiguous split of the graph into device stages, by
// dynamic programming over the graph's down-sets (ideals), as Tarnawski et
// al. (NeurIPS 2020) and PipeDream's planner do, each device's memory a
// constraint; the splits it finds are then simulated.
//
// Units. The nodes of the program are co-location groups (ConstraintGroups),
// since a group must end on one device. Contracting groups makes cycles in a
// training graph: a forward op's group holds its backward ops too, so layer
// 1's group feeds layer 2's and layer 2's gradient flows back into layer 1's.
// The order of the nodes therefore comes from each unit's *anchor*, its first
// op in topological order that is not a source (a forward op for a
// forward/backward group): an op edge u -> v orders unit(u) before unit(v)
// only where unit(u)'s anchor comes first. Backward edges are dropped from
// the order (their bytes still count), so the node DAG is the forward graph.
// A group whose source op (a variable) is consumed before the group's own
// first non-source op (its optimizer update, at the end of the step) joins
// the unit of that first consumer, where PipeDream puts a layer's weights;
// it joins only where that does not narrow the kinds of devices the unit
// may use. A lone source op (an input, a constant) stays a unit of its own:
// the program prices where it goes like any other.
//
// Stages are the GPUs in cluster order (every device when the cluster has no
// GPU). A unit no stage device can run (an input pipeline only the CPU runs)
// sits outside the stages, on the first device that can run it, as the list
// schedulers do; precedence through such units is kept transitively, and
// bytes to them always cross a stage boundary.
//
// Objective: the costliest stage, cost = its units' compute time on its
// device + the time of every byte crossing its boundary at the device's
// slowest route to another device in use (bytes over bandwidth; latency is
// left out so that the cost is linear in bytes). This is the pipelined
// bottleneck of PipeDream and Tarnawski et al., and what the simulator's one
// step comes to where stages overlap: an unrolled RNN's layers run as a
// wavefront across time steps, parallel branches run at once, and the
// busiest device bounds the step. On a pure chain nothing overlaps and
// splitting only adds copies; so the program's table gives, for every k, the
// optimal split onto the first k devices, each of these is simulated, and the
// fastest that fits wins (fewer devices on a tie): at most 2 x stages
// simulator runs (two chains when collapsed), plus RepairMemory's. A
// sum-of-stages objective would never split at all where memory allows, and
// so could not find the RNN's wavefront.
//
// Memory: a stage fits when the sum over its units of persistent bytes and
// forward outputs (activations held for the backward pass; views of
// persistent memory excluded) is at most the device's usable memory.
// Additive, so the program checks it exactly; but it is an estimate (within
// a factor of two of the simulated peak on the built-in models, either way:
// it counts activations freed early, and misses gradients, received copies
// and scratch). So the simulator checks: each number of devices' split is
// simulated and one that fits is preferred, and the chosen placement goes
// through RepairMemory, as the partitioners' placements do. When no split
// fits the estimate, the best split ignoring memory is used, and the note
// says so.
//
// The program: down-sets are enumerated breadth-first from the empty set
// (adding a node whose predecessors are all in), at most kMaxDownSets; then
// for each down-set I every down-set J inside it (walking down I's lattice),
// at most kMaxNestedPairs pairs in all, with
//   best[k][I] = min_J max(best[k-1][J], cost(k, I \ J)).
// A stage's compute and memory are differences of the two down-sets' sums;
// its crossing bytes are cut(I) + cut(J) - 2 w(J, outside I), the last term
// kept up as J shrinks. Over either cap (branchy graphs: the down-sets of w
// independent branches number in the (n / w)^w), the graph collapses to a
// chain, whose down-sets are its prefixes: two chains, the heaviest path by
// compute with every other unit attached to the last unit of the path it
// depends on, and a depth-first topological order (which keeps an RNN's layer
// together); each is cut into at most kMaxChainSegments segments of about
// equal compute, so that the O(segments^2 * stages) program stays within a
// second on graphs of tens of thousands of ops (about 1.3 s in all for 200,000
// ops on 8 GPUs, most of it simulation). Both chains' optimal splits go to the
// simulator with the rest, and the note names the chain of the one chosen.
//
// Deterministic: no randomness, ties broken by order.
#include "placers/dp_split.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>

#include "placers/memory_repair.h"
#include "placers/methods.h"
#include "util/error.h"
#include "util/stop_request.h"

namespace devplace {
namespace dp_split {
namespace {

constexpr int32_t kNoRank = std::numeric_limits<int32_t>::max();
constexpr int64_t kUnlimitedBytes = std::numeric_limits<int64_t>::max();

// Each node's edges as (other end, bytes); the other end may be kOutside.
using Incidence = std::vector<std::vector<std::pair<int32_t, int64_t>>>;

Incidence IncidentEdges(const SplitModel& model) {
  Incidence incident(model.num_nodes());
  for (const SplitEdge& e : model.edges) {
    incident[e.a].emplace_back(e.b, e.bytes);
    if (e.b != kOutside) incident[e.b].emplace_back(e.a, e.bytes);
  }
  return incident;
}

// The down-sets of a model's DAG, as bit sets, with what the program needs
// of each: its lower covers (itself less one maximal node), and the sums a
// stage's cost is a difference of.
class DownSetLattice {
 public:
  DownSetLattice(const SplitModel& model, const Incidence& incident)
      : model_(model),
        incident_(incident),
        words_(std::max(1, (model.num_nodes() + 63) / 64)),
        index_(64, SetHash{this}, SetEqual{this}),
        compute_us_(model.num_stages()) {}
  // The hash set refers back to the lattice.
  DownSetLattice(const DownSetLattice&) = delete;
  DownSetLattice& operator=(const DownSetLattice&) = delete;

  // Enumerates every down-set; false when there are more than kMaxDownSets.
  bool Enumerate() {
    bits_.assign(words_, 0);
    AddFields(-1, -1);
    index_.insert(0);
    const int32_t n = model_.num_nodes();
    for (int32_t set = 0; set < size(); ++set) {
      ThrowIfStopRequested();  // up to kMaxDownSets sets, each scanning every node
      for (int32_t node = 0; node < n; ++node) {
        if (Contains(set, node) || !PredecessorsIn(set, node)) continue;
        // The candidate goes at the end of bits_; kept if new.
        const int32_t candidate = size();
        bits_.resize(static_cast<size_t>(candidate + 1) * words_);
        std::copy_n(bits_.begin() + static_cast<ptrdiff_t>(set) * words_, words_,
                    bits_.begin() + static_cast<ptrdiff_t>(candidate) * words_);
        bits_[static_cast<size_t>(candidate) * words_ + node / 64] |= uint64_t{1} << (node % 64);
        auto [it, inserted] = index_.insert(candidate);
        if (!inserted) {
          bits_.resize(static_cast<size_t>(candidate) * words_);
          lower_covers_[*it].emplace_back(set, node);
          continue;
        }
        if (size_ >= kMaxDownSets) return false;
        AddFields(set, node);
      }
    }
    return true;
  }

  int32_t size() const { return size_; }
  bool Contains(int32_t set, int32_t node) const {
    return (bits_[static_cast<size_t>(set) * words_ + node / 64] >> (node % 64)) & 1;
  }
  template <typename F>
  void ForEachMember(int32_t set, F f) const {
    for (int32_t w = 0; w < words_; ++w) {
      for (uint64_t word = bits_[static_cast<size_t>(set) * words_ + w]; word != 0; word &= word - 1) {
        f(w * 64 + std::countr_zero(word));
      }
    }
  }
  const std::vector<std::pair<int32_t, int32_t>>& lower_covers(int32_t set) const { return lower_covers_[set]; }
  double compute_us(int32_t stage, int32_t set) const { return compute_us_[stage][set]; }
  int64_t memory_bytes(int32_t set) const { return memory_bytes_[set]; }
  int64_t cut_bytes(int32_t set) const { return cut_bytes_[set]; }

 private:
  struct SetHash {
    const DownSetLattice* lattice;
    size_t operator()(int32_t set) const {
      uint64_t h = 0x9e3779b97f4a7c15ull;
      for (int32_t w = 0; w < lattice->words_; ++w) {
        h ^= lattice->bits_[static_cast<size_t>(set) * lattice->words_ + w];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
      }
      return static_cast<size_t>(h);
    }
  };
  struct SetEqual {
    const DownSetLattice* lattice;
    bool operator()(int32_t a, int32_t b) const {
      const uint64_t* bits = lattice->bits_.data();
      const int32_t w = lattice->words_;
      return std::equal(bits + static_cast<ptrdiff_t>(a) * w, bits + static_cast<ptrdiff_t>(a + 1) * w,
                        bits + static_cast<ptrdiff_t>(b) * w);
    }
  };

  bool PredecessorsIn(int32_t set, int32_t node) const {
    for (int32_t p : model_.predecessors[node]) {
      if (!Contains(set, p)) return false;
    }
    return true;
  }

  // The sums of the set just added at the end: `parent` plus `node`, or the
  // empty set when parent < 0.
  void AddFields(int32_t parent, int32_t node) {
    const int32_t set = size_++;
    lower_covers_.emplace_back();
    if (parent < 0) {
      for (auto& c : compute_us_) c.push_back(0);
      memory_bytes_.push_back(0);
      cut_bytes_.push_back(0);
      return;
    }
    lower_covers_.back().emplace_back(parent, node);
    for (int32_t k = 0; k < model_.num_stages(); ++k) {
      compute_us_[k].push_back(compute_us_[k][parent] + model_.compute_us[k][node]);
    }
    memory_bytes_.push_back(memory_bytes_[parent] + model_.memory_bytes[node]);
    // The node's edges into the set stop crossing; the rest start.
    int64_t cut = cut_bytes_[parent];
    for (const auto& [other, bytes] : incident_[node]) {
      cut += other != kOutside && Contains(set, other) ? -bytes : bytes;
    }
    cut_bytes_.push_back(cut);
  }

  const SplitModel& model_;
  const Incidence& incident_;
  int32_t words_;
  int32_t size_ = 0;
  std::vector<uint64_t> bits_;  // [set * words_ + word]
  std::unordered_set<int32_t, SetHash, SetEqual> index_;
  std::vector<std::vector<std::pair<int32_t, int32_t>>> lower_covers_;  // [set]: (set less node, node)
  std::vector<std::vector<double>> compute_us_;                         // [stage][set]
  std::vector<int64_t> memory_bytes_;
  std::vector<int64_t> cut_bytes_;
};

// The stages of the optimal split onto stages 0 .. last, from the program's
// choices (choice[k][I]: the down-set J before stage k; I itself for an
// empty stage).
std::vector<int32_t> Reconstruct(const DownSetLattice& lattice, const std::vector<std::vector<int32_t>>& choice,
                                 int32_t full, int32_t last, int32_t num_nodes) {
  std::vector<int32_t> stage_of_node(num_nodes, -1);
  int32_t set = full;
  for (int32_t k = last; k >= 0; --k) {
    const int32_t before = choice[k][set];
    lattice.ForEachMember(set, [&](int32_t node) {
      if (!lattice.Contains(before, node)) stage_of_node[node] = k;
    });
    set = before;
  }
  assert(set == 0);
  return stage_of_node;
}

}  // namespace

SplitSolution SolveSplit(const SplitModel& model) {
  SplitSolution solution;
  const int64_t n = model.num_nodes();
  const int32_t S = model.num_stages();
  if (S == 0) return solution;
  // Fewer down-sets or pairs are impossible: a linear extension alone has
  // n + 1 prefixes and (n + 1)(n + 2) / 2 nested pairs of them.
  if (n + 1 > kMaxDownSets) {
    solution.over_cap = OverCap::kDownSets;
    solution.down_sets = kMaxDownSets + 1;
    return solution;
  }
  if ((n + 1) * (n + 2) / 2 > kMaxNestedPairs) {
    solution.over_cap = OverCap::kNestedPairs;
    solution.nested_pairs = kMaxNestedPairs + 1;
    return solution;
  }
  const Incidence incident = IncidentEdges(model);
  DownSetLattice lattice(model, incident);
  const bool enumerated = lattice.Enumerate();
  solution.down_sets = lattice.size();
  if (!enumerated) {
    solution.over_cap = OverCap::kDownSets;
    solution.down_sets = kMaxDownSets + 1;
    return solution;
  }

  const int32_t M = lattice.size();
  std::vector<std::vector<double>> best(S, std::vector<double>(M, kNoSplit));
  std::vector<std::vector<int32_t>> choice(S, std::vector<int32_t>(M, -1));
  std::vector<int64_t> to_outside_bytes(n, 0);  // a node's bytes to nodes outside I
  std::vector<int64_t> cross_bytes(M, 0);       // w(J, outside I), for the J inside I
  std::vector<int32_t> seen(M, -1);
  std::vector<int32_t> queue;
  for (int32_t I = 0; I < M; ++I) {
    ThrowIfStopRequested();  // the program visits up to kMaxNestedPairs pairs
    lattice.ForEachMember(I, [&](int32_t node) {
      int64_t bytes = 0;
      for (const auto& [other, b] : incident[node]) bytes += other == kOutside || !lattice.Contains(I, other) ? b : 0;
      to_outside_bytes[node] = bytes;
    });
    // Every J inside I, breadth-first down I's lattice from I itself.
    queue.assign(1, I);
    seen[I] = I;
    cross_bytes[I] = lattice.cut_bytes(I);
    for (size_t head = 0; head < queue.size(); ++head) {
      const int32_t J = queue[head];
      if (++solution.nested_pairs > kMaxNestedPairs) {
        solution.over_cap = OverCap::kNestedPairs;
        return solution;
      }
      for (const auto& [below, node] : lattice.lower_covers(J)) {
        if (seen[below] == I) continue;
        seen[below] = I;
        cross_bytes[below] = cross_bytes[J] - to_outside_bytes[node];
        queue.push_back(below);
      }
      if (J == I) continue;  // an empty stage: below
      const int64_t stage_bytes = lattice.cut_bytes(I) + lattice.cut_bytes(J) - 2 * cross_bytes[J];
      const int64_t stage_memory = lattice.memory_bytes(I) - lattice.memory_bytes(J);
      for (int32_t k = 0; k < S; ++k) {
        if (stage_memory > model.capacity_bytes[k]) continue;
        const double before = k == 0 ? (J == 0 ? 0.0 : kNoSplit) : best[k - 1][J];
        const double cost = lattice.compute_us(k, I) - lattice.compute_us(k, J) +
                            model.transfer_us_per_byte[k] * static_cast<double>(stage_bytes);
        const double objective = std::max(before, cost);
        if (objective < best[k][I]) {
          best[k][I] = objective;
          choice[k][I] = J;
        }
      }
    }
    if (I == 0) best[0][0] = 0, choice[0][0] = 0;
    // Stage k left empty: the best onto the stages before it.
    for (int32_t k = 1; k < S; ++k) {
      if (best[k - 1][I] < best[k][I]) {
        best[k][I] = best[k - 1][I];
        choice[k][I] = I;
      }
    }
  }

  const int32_t full = M - 1;  // breadth-first by size: the whole set is last
  solution.best.resize(S);
  for (int32_t k = 0; k < S; ++k) {
    if (best[k][full] == kNoSplit) continue;
    solution.best[k].objective_us = best[k][full];
    solution.best[k].stage_of_node = Reconstruct(lattice, choice, full, k, model.num_nodes());
  }
  return solution;
}

namespace {

bool IsSource(const Graph& graph, int32_t op) {
  return graph.in_data_edges(op).empty() && graph.control_predecessors(op).empty();
}

// Calls f(successor) for every data and control successor of `op`.
template <typename F>
void ForEachSuccessor(const Graph& graph, int32_t op, F f) {
  for (int32_t e : graph.out_data_edges(op)) f(graph.data_edges()[e].dst);
  for (int32_t next : graph.control_successors(op)) f(next);
}

// The unit of each group (a representative group): a group whose source op
// is consumed outside it before the group's first non-source op (a variable
// and its update) joins the unit of that first consumer, unless that would
// narrow the device kinds the consumer's unit may use.
std::vector<int32_t> JoinSourceGroups(const Graph& graph, const Grouping& groups, const std::vector<int32_t>& rank,
                                      const std::vector<int32_t>& first_work_rank) {
  const int32_t G = groups.num_groups();
  std::vector<int32_t> parent(G);
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<DeviceKindMask> kinds(G);
  for (int32_t g = 0; g < G; ++g) kinds[g] = groups.groups[g].device_kinds;
  auto find = [&](int32_t g) {
    while (parent[g] != g) g = parent[g] = parent[parent[g]];
    return g;
  };
  for (int32_t g = 0; g < G; ++g) {
    int32_t consumer = -1;
    for (int32_t op : groups.groups[g].ops) {
      if (!IsSource(graph, op)) continue;
      ForEachSuccessor(graph, op, [&](int32_t next) {
        if (groups.group_of_op[next] != g && (consumer < 0 || rank[next] < rank[consumer])) consumer = next;
      });
    }
    // Only a group with work of its own (an update) that comes after a
    // consumer: a lone source op (an input, a constant) stays a unit, which
    // the program places like any other.
    if (consumer < 0 || first_work_rank[g] == kNoRank || rank[consumer] >= first_work_rank[g]) continue;
    const int32_t a = find(g), b = find(groups.group_of_op[consumer]);
    if (a == b || (kinds[a] & kinds[b]) != kinds[b]) continue;
    parent[a] = b;
  }
  std::vector<int32_t> root(G);
  for (int32_t g = 0; g < G; ++g) root[g] = find(g);
  return root;
}

// What an op adds to its device's memory for the step, as the program
// counts it: its persistent bytes, and the outputs of a forward op (the
// activations a training step holds until its backward pass). Gradients and
// updates are transient: counting every output would put RNNLM at 33 GB
// where its simulated peak on one GPU is 5 GB. Views of persistent memory
// allocate nothing.
int64_t HeldBytes(const Op& op) {
  int64_t bytes = op.persistent_bytes;
  if (op.phase == Phase::kBackward || op.phase == Phase::kUpdate) return bytes;
  for (const TensorSpec& t : op.outputs) bytes += t.aliases_persistent ? 0 : t.bytes;
  return bytes;
}

// Microseconds per byte from device `from` to `to`, hop after hop.
double RouteUsPerByte(const Cluster& cluster, int32_t from, int32_t to) {
  double us = 0;
  for (const Hop& hop : cluster.Route(from, to)) us += 1e6 / cluster.links[hop.link].bandwidth_bytes_per_s;
  return us;
}

// The placer's model, with what it takes to turn a split into a placement.
struct UnitModel {
  SplitModel model;
  Grouping groups;
  std::vector<int32_t> node_of_group;            // kOutside: placed outside the stages
  std::vector<int32_t> outside_device_of_group;  // where those go
};

// The GPUs in cluster order, or every device when there is none.
std::vector<int32_t> StageDevices(const Cluster& cluster) {
  std::vector<int32_t> gpus = DevicesOfKind(cluster, DeviceKind::kGpu);
  if (!gpus.empty()) return gpus;
  std::vector<int32_t> all(cluster.num_devices());
  std::iota(all.begin(), all.end(), 0);
  return all;
}

// The units in anchor order, each a list of groups; `unit_of_group` filled.
std::vector<std::vector<int32_t>> OrderUnits(const Graph& graph, const Grouping& groups,
                                             const std::vector<int32_t>& rank, std::vector<int32_t>& unit_of_group) {
  const int32_t G = groups.num_groups();
  std::vector<int32_t> first_work_rank(G, kNoRank), first_rank(G, kNoRank);
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    const int32_t g = groups.group_of_op[op];
    first_rank[g] = std::min(first_rank[g], rank[op]);
    if (!IsSource(graph, op)) first_work_rank[g] = std::min(first_work_rank[g], rank[op]);
  }
  const std::vector<int32_t> root = JoinSourceGroups(graph, groups, rank, first_work_rank);
  // A unit's anchor: its first non-source op, or its first op if all are
  // sources. Anchors are ops of the unit, so no two units share one.
  std::vector<int32_t> anchor(G, kNoRank), any_rank(G, kNoRank);
  for (int32_t g = 0; g < G; ++g) {
    anchor[root[g]] = std::min(anchor[root[g]], first_work_rank[g]);
    any_rank[root[g]] = std::min(any_rank[root[g]], first_rank[g]);
  }
  std::vector<int32_t> roots;
  for (int32_t g = 0; g < G; ++g) {
    if (root[g] != g) continue;
    if (anchor[g] == kNoRank) anchor[g] = any_rank[g];
    roots.push_back(g);
  }
  std::sort(roots.begin(), roots.end(), [&](int32_t a, int32_t b) { return anchor[a] < anchor[b]; });
  std::vector<int32_t> unit_of_root(G, -1);
  for (size_t u = 0; u < roots.size(); ++u) unit_of_root[roots[u]] = static_cast<int32_t>(u);
  std::vector<std::vector<int32_t>> units(roots.size());
  unit_of_group.assign(G, -1);
  for (int32_t g = 0; g < G; ++g) {
    unit_of_group[g] = unit_of_root[root[g]];
    units[unit_of_group[g]].push_back(g);
  }
  return units;
}

// Predecessors among the nodes: unit a precedes unit b (a < b in anchor
// order) for every op edge from a to b; through units outside the stages,
// transitively.
void AddPredecessors(const Graph& graph, const std::vector<int32_t>& unit_of_op,
                     const std::vector<int32_t>& node_of_unit, SplitModel& model) {
  const int32_t U = static_cast<int32_t>(node_of_unit.size());
  std::vector<std::vector<int32_t>> unit_predecessors(U);
  auto add = [&](int32_t src, int32_t dst) {
    const int32_t a = unit_of_op[src], b = unit_of_op[dst];
    if (a < b) unit_predecessors[b].push_back(a);
  };
  for (const DataEdge& e : graph.data_edges()) add(e.src, e.dst);
  for (const ControlEdge& e : graph.control_edges()) add(e.src, e.dst);
  std::vector<std::vector<int32_t>> reach(U);  // for units outside: the nodes before them
  model.predecessors.assign(model.num_nodes(), {});
  for (int32_t b = 0; b < U; ++b) {
    std::vector<int32_t> nodes;
    for (int32_t a : unit_predecessors[b]) {
      if (node_of_unit[a] != kOutside) {
        nodes.push_back(node_of_unit[a]);
      } else {
        nodes.insert(nodes.end(), reach[a].begin(), reach[a].end());
      }
    }
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    (node_of_unit[b] != kOutside ? model.predecessors[node_of_unit[b]] : reach[b]) = std::move(nodes);
  }
}

// Bytes between nodes (and between nodes and the outside): each tensor once
// per consuming unit.
void AddEdges(const Graph& graph, const std::vector<int32_t>& unit_of_op, const std::vector<int32_t>& node_of_unit,
              SplitModel& model) {
  std::map<std::pair<int32_t, int32_t>, int64_t> bytes;  // ordered: deterministic
  std::vector<int32_t> destinations;
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    const auto out = graph.out_data_edges(op);
    // Out-edges are sorted by output: one run per tensor.
    for (size_t i = 0; i < out.size();) {
      const int32_t output = graph.data_edges()[out[i]].src_output;
      destinations.clear();
      for (; i < out.size() && graph.data_edges()[out[i]].src_output == output; ++i) {
        destinations.push_back(unit_of_op[graph.data_edges()[out[i]].dst]);
      }
      std::sort(destinations.begin(), destinations.end());
      destinations.erase(std::unique(destinations.begin(), destinations.end()), destinations.end());
      for (int32_t unit : destinations) {
        if (unit == unit_of_op[op]) continue;
        int32_t a = node_of_unit[unit_of_op[op]], b = node_of_unit[unit];
        if (a == kOutside) std::swap(a, b);
        if (a == kOutside) continue;  // between two units outside the stages
        if (b != kOutside && b < a) std::swap(a, b);
        bytes[{a, b}] += graph.op(op).outputs[output].bytes;
      }
    }
  }
  for (const auto& [pair, b] : bytes) model.edges.push_back({pair.first, pair.second, b});
}

UnitModel BuildUnitModel(const PlacementProblem& problem) {
  const Graph& graph = problem.graph;
  const Cluster& cluster = problem.cluster;
  UnitModel um;
  um.groups = ConstraintGroups(graph);
  const Grouping& groups = um.groups;
  SplitModel& model = um.model;
  model.stage_devices = StageDevices(cluster);
  const DeviceKindMask stage_kind = MaskOf(cluster.devices[model.stage_devices.front()].kind);

  std::vector<int32_t> rank(graph.num_ops());
  for (size_t i = 0; i < graph.topological_order().size(); ++i) {
    rank[graph.topological_order()[i]] = static_cast<int32_t>(i);
  }
  std::vector<int32_t> unit_of_group;
  const std::vector<std::vector<int32_t>> units = OrderUnits(graph, groups, rank, unit_of_group);
  const int32_t U = static_cast<int32_t>(units.size());

  // Nodes: the units a stage device can run, in anchor order. The rest go to
  // the first device that can run them.
  std::vector<int32_t> node_of_unit(U, kOutside);
  um.outside_device_of_group.assign(groups.num_groups(), -1);
  std::vector<char> outside_device_used(cluster.num_devices(), 0);
  int32_t num_nodes = 0;
  for (int32_t u = 0; u < U; ++u) {
    DeviceKindMask kinds = kAllDeviceKinds;
    for (int32_t g : units[u]) kinds &= groups.groups[g].device_kinds;
    if (kinds & stage_kind) {
      node_of_unit[u] = num_nodes++;
      continue;
    }
    int32_t device = 0;
    for (int32_t d = 0; d < cluster.num_devices(); ++d) {
      if (kinds & MaskOf(cluster.devices[d].kind)) {
        device = d;
        break;
      }
    }
    for (int32_t g : units[u]) um.outside_device_of_group[g] = device;
    outside_device_used[device] = 1;
  }
  um.node_of_group.resize(groups.num_groups());
  for (int32_t g = 0; g < groups.num_groups(); ++g) um.node_of_group[g] = node_of_unit[unit_of_group[g]];
  std::vector<int32_t> unit_of_op(graph.num_ops());
  model.node_of_op.resize(graph.num_ops());
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    unit_of_op[op] = unit_of_group[groups.group_of_op[op]];
    model.node_of_op[op] = node_of_unit[unit_of_op[op]];
  }

  const int32_t S = static_cast<int32_t>(model.stage_devices.size());
  model.memory_bytes.assign(num_nodes, 0);
  model.compute_us.assign(S, std::vector<double>(num_nodes, 0));
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    const int32_t node = model.node_of_op[op];
    if (node == kOutside) continue;
    const Op& o = graph.op(op);
    model.memory_bytes[node] += HeldBytes(o);
    for (int32_t k = 0; k < S; ++k) model.compute_us[k][node] += problem.cost.OpTimeUs(o, model.stage_devices[k]);
  }
  AddPredecessors(graph, unit_of_op, node_of_unit, model);
  AddEdges(graph, unit_of_op, node_of_unit, model);

  // Each stage's bytes move at its slowest route to another device in use.
  std::vector<int32_t> in_use = model.stage_devices;
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    if (outside_device_used[d] && std::find(in_use.begin(), in_use.end(), d) == in_use.end()) in_use.push_back(d);
  }
  for (int32_t d : model.stage_devices) {
    model.capacity_bytes.push_back(cluster.devices[d].usable_memory_bytes());
    double us_per_byte = 0;
    for (int32_t other : in_use) {
      if (other == d) continue;
      us_per_byte = std::max({us_per_byte, RouteUsPerByte(cluster, d, other), RouteUsPerByte(cluster, other, d)});
    }
    model.transfer_us_per_byte.push_back(us_per_byte);
  }
  return um;
}

// ---- Collapsing to a chain ----

// A topological order of the model's nodes (Kahn's algorithm; with
// `depth_first`, a stack, so that each chain is followed as far as it goes).
std::vector<int32_t> TopologicalOrder(const SplitModel& model, bool depth_first) {
  const int32_t n = model.num_nodes();
  std::vector<std::vector<int32_t>> successors(n);
  std::vector<int32_t> pending(n, 0);
  for (int32_t v = 0; v < n; ++v) {
    for (int32_t p : model.predecessors[v]) successors[p].push_back(v);
    pending[v] = static_cast<int32_t>(model.predecessors[v].size());
  }
  std::vector<int32_t> ready, order;
  for (int32_t v = n - 1; v >= 0; --v) {
    if (pending[v] == 0) ready.push_back(v);
  }
  if (!depth_first) std::reverse(ready.begin(), ready.end());
  size_t head = 0;
  while (depth_first ? !ready.empty() : head < ready.size()) {
    int32_t v;
    if (depth_first) {
      v = ready.back();
      ready.pop_back();
    } else {
      v = ready[head++];
    }
    order.push_back(v);
    std::vector<int32_t> released;
    for (int32_t s : successors[v]) {
      if (--pending[s] == 0) released.push_back(s);
    }
    std::sort(released.begin(), released.end());
    // On the stack the lowest index goes on top, so ties keep node order.
    if (depth_first) {
      ready.insert(ready.end(), released.rbegin(), released.rend());
    } else {
      ready.insert(ready.end(), released.begin(), released.end());
    }
  }
  return order;
}

// A node's weight for the chains: its compute on the fastest stage.
double NodeWeightUs(const SplitModel& model, int32_t node) {
  double w = kNoSplit;
  for (const auto& stage : model.compute_us) w = std::min(w, stage[node]);
  return w;
}

// Positions along the heaviest path by compute: the path's nodes in order,
// every other node at the position of the last path node it depends on (0 if
// none). Positions never decrease along an edge, so prefixes are down-sets.
std::vector<int32_t> HeaviestPathPositions(const SplitModel& model, int32_t& num_positions) {
  const int32_t n = model.num_nodes();
  const std::vector<int32_t> order = TopologicalOrder(model, false);
  std::vector<double> path_us(n, 0);
  std::vector<int32_t> previous(n, -1);
  int32_t end = order.front();
  for (int32_t v : order) {
    for (int32_t p : model.predecessors[v]) {
      if (previous[v] < 0 || path_us[p] > path_us[previous[v]]) previous[v] = p;
    }
    path_us[v] = NodeWeightUs(model, v) + (previous[v] >= 0 ? path_us[previous[v]] : 0);
    if (path_us[v] > path_us[end]) end = v;
  }
  std::vector<int32_t> path;
  for (int32_t v = end; v >= 0; v = previous[v]) path.push_back(v);
  std::reverse(path.begin(), path.end());
  std::vector<int32_t> position(n, -1);
  for (size_t i = 0; i < path.size(); ++i) position[path[i]] = static_cast<int32_t>(i);
  for (int32_t v : order) {
    if (position[v] >= 0) continue;  // on the path
    int32_t latest = -1;
    for (int32_t p : model.predecessors[v]) latest = std::max(latest, position[p]);
    position[v] = latest;
  }
  for (int32_t& p : position) p = std::max(p, 0);
  num_positions = static_cast<int32_t>(path.size());
  return position;
}

std::vector<int32_t> DepthFirstPositions(const SplitModel& model, int32_t& num_positions) {
  const std::vector<int32_t> order = TopologicalOrder(model, true);
  std::vector<int32_t> position(model.num_nodes());
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int32_t>(i);
  num_positions = model.num_nodes();
  return position;
}

struct Chain {
  std::string name;
  SplitModel model;  // segments in a chain
  std::vector<int32_t> segment_of_node;
};

// Cuts the positions into at most kMaxChainSegments segments of about equal
// compute (of equal count when nothing computes), and builds the chain's
// model: each segment the sum of its nodes, each after the one before.
Chain CollapseToChain(std::string name, const SplitModel& model, const std::vector<int32_t>& position,
                      int32_t num_positions) {
  std::vector<double> weight_us(num_positions, 0);
  for (int32_t v = 0; v < model.num_nodes(); ++v) weight_us[position[v]] += NodeWeightUs(model, v);
  const double total_us = std::accumulate(weight_us.begin(), weight_us.end(), 0.0);
  std::vector<int32_t> bucket(num_positions);
  double before_us = 0;
  for (int32_t p = 0; p < num_positions; ++p) {
    if (num_positions <= kMaxChainSegments) {
      bucket[p] = p;
    } else if (total_us > 0) {
      bucket[p] =
          std::min<int32_t>(kMaxChainSegments - 1, static_cast<int32_t>(before_us / total_us * kMaxChainSegments));
    } else {
      bucket[p] = static_cast<int32_t>(int64_t{p} * kMaxChainSegments / num_positions);
    }
    before_us += weight_us[p];
  }
  // Number the buckets in use 0, 1, ...
  std::vector<int32_t> segment_of_bucket(num_positions, -1);
  int32_t segments = 0;
  for (int32_t p = 0; p < num_positions; ++p) {
    if (segment_of_bucket[bucket[p]] < 0) segment_of_bucket[bucket[p]] = segments++;
  }
  Chain chain;
  chain.name = std::move(name);
  chain.segment_of_node.resize(model.num_nodes());
  for (int32_t v = 0; v < model.num_nodes(); ++v) chain.segment_of_node[v] = segment_of_bucket[bucket[position[v]]];

  SplitModel& m = chain.model;
  m.capacity_bytes = model.capacity_bytes;
  m.transfer_us_per_byte = model.transfer_us_per_byte;
  m.stage_devices = model.stage_devices;
  m.memory_bytes.assign(segments, 0);
  m.compute_us.assign(model.num_stages(), std::vector<double>(segments, 0));
  m.predecessors.assign(segments, {});
  for (int32_t s = 1; s < segments; ++s) m.predecessors[s] = {s - 1};
  for (int32_t v = 0; v < model.num_nodes(); ++v) {
    const int32_t s = chain.segment_of_node[v];
    m.memory_bytes[s] += model.memory_bytes[v];
    for (int32_t k = 0; k < model.num_stages(); ++k) m.compute_us[k][s] += model.compute_us[k][v];
  }
  std::map<std::pair<int32_t, int32_t>, int64_t> bytes;
  for (const SplitEdge& e : model.edges) {
    int32_t a = chain.segment_of_node[e.a];
    int32_t b = e.b == kOutside ? kOutside : chain.segment_of_node[e.b];
    if (a == b) continue;
    if (b != kOutside && b < a) std::swap(a, b);
    bytes[{a, b}] += e.bytes;
  }
  for (const auto& [pair, b] : bytes) m.edges.push_back({pair.first, pair.second, b});
  return chain;
}

// A split the program found optimal: for `stages` devices, over the nodes of
// the unit model, along a chain when the graph collapsed.
struct Candidate {
  int32_t stages = 0;
  StageSplit split;
  std::string chain;  // empty when the program ran on the graph itself
  int32_t chain_segments = 0;
};

struct Plan {
  std::vector<Candidate> candidates;  // by number of stages, then chain
  std::string collapse;               // why the graph collapsed; empty if it did not
  bool fits() const {
    return std::any_of(candidates.begin(), candidates.end(), [](const Candidate& c) { return c.split.found(); });
  }
};

std::string OverCapReason(const SplitSolution& s, int32_t num_nodes) {
  if (s.over_cap == OverCap::kDownSets) {
    return "more than " + std::to_string(kMaxDownSets) + " down-sets of " + std::to_string(num_nodes) +
           " units exceeded the cap of " + std::to_string(kMaxDownSets);
  }
  return "more than " + std::to_string(kMaxNestedPairs) + " nested pairs of down-sets of " + std::to_string(num_nodes) +
         " units exceeded the cap of " + std::to_string(kMaxNestedPairs);
}

// The optimal split for each number of stages: on the graph itself, or, over
// the caps, on each of the two chains it collapses to.
Plan PlanSplits(const SplitModel& model) {
  Plan plan;
  const int32_t S = model.num_stages();
  SplitSolution solution = SolveSplit(model);
  if (solution.over_cap == OverCap::kNo) {
    for (int32_t k = 0; k < S; ++k) plan.candidates.push_back({k + 1, std::move(solution.best[k]), "", 0});
    return plan;
  }
  plan.collapse = OverCapReason(solution, model.num_nodes());
  int32_t positions = 0;
  std::vector<Chain> chains;
  std::vector<int32_t> position = HeaviestPathPositions(model, positions);
  chains.push_back(CollapseToChain("the heaviest path", model, position, positions));
  position = DepthFirstPositions(model, positions);
  chains.push_back(CollapseToChain("a depth-first topological order", model, position, positions));
  std::vector<SplitSolution> solutions;
  for (const Chain& chain : chains) {
    solutions.push_back(SolveSplit(chain.model));
    if (solutions.back().over_cap != OverCap::kNo) {
      throw std::logic_error("dp_split: a collapsed chain exceeded the caps");
    }
  }
  for (int32_t k = 0; k < S; ++k) {
    for (size_t c = 0; c < chains.size(); ++c) {
      Candidate candidate{k + 1, {}, chains[c].name, chains[c].model.num_nodes()};
      const StageSplit& on_chain = solutions[c].best[k];
      candidate.split.objective_us = on_chain.objective_us;
      if (on_chain.found()) {
        candidate.split.stage_of_node.resize(model.num_nodes());
        for (int32_t v = 0; v < model.num_nodes(); ++v) {
          candidate.split.stage_of_node[v] = on_chain.stage_of_node[chains[c].segment_of_node[v]];
        }
      }
      plan.candidates.push_back(std::move(candidate));
    }
  }
  return plan;
}

std::vector<int32_t> DeviceOfGroup(const UnitModel& um, const std::vector<int32_t>& stage_of_node) {
  std::vector<int32_t> device(um.groups.num_groups());
  for (int32_t g = 0; g < um.groups.num_groups(); ++g) {
    const int32_t node = um.node_of_group[g];
    device[g] = node == kOutside ? um.outside_device_of_group[g] : um.model.stage_devices[stage_of_node[node]];
  }
  return device;
}

void AppendNote(std::string& note, const std::string& part) {
  if (part.empty()) return;
  note += (note.empty() ? "" : "; ") + part;
}

}  // namespace

SplitModel BuildSplitModel(const PlacementProblem& problem) { return BuildUnitModel(problem).model; }

}  // namespace dp_split

PlacerOutput PlaceDpSplit(const PlacementProblem& problem) {
  using namespace dp_split;
  PlacerOutput out;
  if (problem.graph.num_ops() == 0) return out;
  UnitModel um = BuildUnitModel(problem);
  const int32_t S = um.model.num_stages();

  Plan plan = PlanSplits(um.model);
  std::string memory_note;
  if (!plan.fits()) {
    // Nothing fits the estimate: the best split without it, repaired below.
    SplitModel unlimited = um.model;
    unlimited.capacity_bytes.assign(S, kUnlimitedBytes);
    plan = PlanSplits(unlimited);
    memory_note =
        "no contiguous split fits the devices' memory (parameters and forward outputs of each stage); "
        "placed the best split ignoring memory";
  }

  // Each optimal split (per number of devices, per chain) simulated; the
  // fastest that fits wins, the earlier (fewer devices) on a tie. If none
  // fits, the one spreading over the most devices goes to the repair.
  int32_t chosen = -1;
  SimResult chosen_result;
  std::vector<Placement> tried;
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    const Candidate& candidate = plan.candidates[i];
    if (!candidate.split.found()) continue;
    Placement placement = ExpandGroupPlacement(um.groups, DeviceOfGroup(um, candidate.split.stage_of_node));
    if (std::find(tried.begin(), tried.end(), placement) != tried.end()) continue;
    tried.push_back(std::move(placement));
    SimResult result = problem.simulator.Run(tried.back());
    const bool better = chosen < 0 || (result.ok() && !chosen_result.ok()) ||
                        (result.ok() == chosen_result.ok() && result.step_time_us < chosen_result.step_time_us);
    if (better) {
      chosen = static_cast<int32_t>(i);
      chosen_result = std::move(result);
    }
  }
  if (!chosen_result.ok()) {
    for (size_t i = 0; i < plan.candidates.size(); ++i) {
      if (plan.candidates[i].split.found()) chosen = static_cast<int32_t>(i);
    }
  }
  const Candidate& best = plan.candidates[chosen];

  if (!plan.collapse.empty()) {
    AppendNote(out.note, "collapsed to a chain: " + plan.collapse + "; split along " + best.chain + " (" +
                             std::to_string(best.chain_segments) + " segments)");
  }
  AppendNote(out.note, memory_note);
  std::string repair_note;
  out.placement = RepairMemory(problem, um.groups, DeviceOfGroup(um, best.split.stage_of_node), repair_note);
  AppendNote(out.note, repair_note);
  return out;
}

}  // namespace devplace
