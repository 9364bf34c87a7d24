// exact: the optimal placement of a small graph, by depth-first branch and
// bound over the simulator. The units are the co-location groups; each goes
// to a device that can run all of its ops. A partial placement (some units
// fixed, the rest free) is pruned when a lower bound on the step time of
// all its completions is no better than the best placement simulated so
// far, or when all its completions must run out of memory. Only complete
// placements are simulated, since the simulator is defined on nothing less.
//
// What makes it fast enough for a few dozen units:
// - units with one possible device first, then the heaviest (most compute)
//   first, so the bound sees the big decisions early;
// - an incumbent from the one-shot placers before the search starts;
// - at each node, children in order of their bound, most promising first;
// - devices that are exact copies of each other (interchangeable: see
//   InterchangeableDevices) are tried only once while unused.
#include "placers/exact_placer.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>
#include <string>

#include "placers/methods.h"
#include "placers/search_cost.h"
#include "util/error.h"
#include "util/stop_request.h"

namespace devplace {
namespace exact {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The bound adds the same times as the simulator but in another order (and
// a route's time as latencies plus bytes times the sum of inverse
// bandwidths), and floating-point sums depend on their order, by a few
// units in the last place per term. The bound is lowered by this fraction,
// far more than that rounding and far less than any time difference that
// matters, so that it stays below the simulated time exactly.
constexpr double kRoundingSlack = 1e-9;

// Index of the link between a and b, or -1; -2 when there are several.
int32_t LinkBetween(const Cluster& cluster, int32_t a, int32_t b) {
  int32_t found = -1;
  for (int32_t l = 0; l < static_cast<int32_t>(cluster.links.size()); ++l) {
    const Link& link = cluster.links[l];
    if ((link.a == a && link.b == b) || (link.a == b && link.b == a)) found = found == -1 ? l : -2;
  }
  return found;
}

}  // namespace

// ---------------------------------------------------------------------------
// The bound.
//
// Take any valid complete placement P that agrees with the fixed units, and
// its simulated step time T (the time the last op or transfer ends). Facts
// about the simulator (docs/simulator.md, sim/simulator.cc) used below:
//  (F1) an op runs without interruption for exactly its cost-model time on
//       its device, time_us_[op][device] (PlaceExact's runs have no noise);
//       a device runs at most parallel_ops ops at any instant (a wake-up
//       or host contention holds the slot longer, never shorter, which
//       every use of F1 below tolerates: each bound needs "at least");
//  (F2) an op starts only after each control predecessor has finished and
//       each input tensor is on its device: at once if its producer is on
//       the same device, otherwise after the tensor's trip over its route,
//       whose hops run one after the other, each taking at least
//       HopTimeUs(hop, bytes) (queueing only adds to that), the first
//       starting no earlier than the producer's end;
//  (F3) T is at least the end of every op.
// Heads. Let S[op][d] be infinite where op cannot be on d (its unit is
// fixed elsewhere, or d cannot run the unit); else the max over data inputs
// from q of min over devices p of (S[q][p] + time[q][p] + (p == d ? 0 :
// transfer(p, d))), where transfer(p, d) is the sum of HopTimeUs over the
// route from p to d, and over control predecessors q of min_p (S[q][p] +
// time[q][p]). By induction in topological order, if op runs on d in P it
// starts at or after S[op][d]: each producer q ran on some p and started at
// or after S[q][p] (induction), ran time[q][p] (F1), and its tensor then
// took at least the route's hop times (F2).
// Tails. Symmetrically, in reverse topological order, let Q[op][d] be the
// max over data consumers s of min over devices d' of ((d' == d ? 0 :
// transfer(d, d')) + time[s][d'] + Q[s][d']), and over control successors
// of the same without the transfer; 0 for an op nothing follows. If op runs
// on d and ends at E, the step lasts until at least E + Q[op][d]: each
// consumer s on d' starts no earlier than the tensor's arrival (F2), runs
// time[s][d'], and the step lasts Q[s][d'] more after it (induction; F3
// for the base).
// The terms (ops of a free unit may each take their own best device here,
// which only weakens them):
//  (a) Critical path: T >= min_d (S[op][d] + time[op][d]) for every op (F3).
//  (b) Contention on each device d (the one-machine head-body-tail bound).
//      Let J be any set of ops fixed on d, h the smallest of their heads
//      S[op][d] and t the smallest of their tails Q[op][d]. Each op of J
//      runs within [h, T - t] (above), so by F1 their total time is at most
//      parallel_ops(d) * (T - h - t): T >= h + total / parallel_ops(d) + t.
//      The sets tried: the ops with the latest heads, and those with the
//      longest tails, k = 1, 2, ... of them. With J all of them and h = t =
//      0 this holds the device-load bound total / parallel_ops.
//  (c) The same over the whole cluster: every op (fixed or free) keeps one
//      of the sum(parallel_ops) slots busy for at least its time (on its
//      fixed device, or its fastest allowed one), from no earlier than its
//      smallest head to no later than T minus its smallest tail. With J all
//      ops this is total work / slots.
//  (d) The same on each link channel, which carries one transfer at a time.
//      A tensor whose producer is fixed on p, read by ops fixed on d != p,
//      is sent from p to d once (F2: once per destination) and takes every
//      hop of the route in turn. Its i-th hop, as a job on that hop's
//      channel: head S[producer][p] + time + the hops before it; time its
//      HopTimeUs; tail the hops after it plus, over those readers r, the
//      largest time[r][d] + Q[r][d] (each reader waits for the whole trip).
// The bound is the largest of them, lowered by kRoundingSlack.
// ---------------------------------------------------------------------------

PartialBound::PartialBound(const Graph& graph, const Cluster& cluster, const CostModel& cost, const Grouping& units)
    : graph_(graph),
      cluster_(cluster),
      num_devices_(cluster.num_devices()),
      unit_of_op_(units.group_of_op),
      allowed_(units.num_groups()) {
  const int32_t n = graph.num_ops();
  const int32_t D = num_devices_;
  for (int32_t u = 0; u < units.num_groups(); ++u) {
    for (int32_t d = 0; d < D; ++d) {
      const auto& ops = units.groups[u].ops;
      if (std::all_of(ops.begin(), ops.end(),
                      [&](int32_t op) { return cost.OpTimeUs(graph.op(op), d) != kCannotRun; })) {
        allowed_[u].push_back(d);
      }
    }
  }
  time_us_.assign(static_cast<size_t>(n) * D, kInfinity);
  fastest_us_.assign(n, kInfinity);
  for (int32_t op = 0; op < n; ++op) {
    for (int32_t d : allowed_[unit_of_op_[op]]) {
      time_us_[op * D + d] = cost.OpTimeUs(graph.op(op), d);
      fastest_us_[op] = std::min(fastest_us_[op], time_us_[op * D + d]);
    }
  }
  const auto& edges = graph.data_edges();
  route_latency_us_.assign(static_cast<size_t>(D) * D, 0);
  route_us_per_byte_.assign(static_cast<size_t>(D) * D, 0);
  for (int32_t from = 0; from < D; ++from) {
    for (int32_t to = 0; to < D; ++to) {
      for (const Hop& hop : cluster.Route(from, to)) {
        route_latency_us_[from * D + to] += cluster.links[hop.link].latency_us;
        route_us_per_byte_[from * D + to] += 1e6 / cluster.links[hop.link].bandwidth_bytes_per_s;
      }
    }
  }
  edge_bytes_.resize(edges.size());
  for (size_t e = 0; e < edges.size(); ++e) {
    edge_bytes_[e] = static_cast<double>(graph.op(edges[e].src).outputs[edges[e].src_output].bytes);
  }
  for (const Device& d : cluster.devices) {
    parallel_ops_.push_back(d.parallel_ops);
    total_slots_ += d.parallel_ops;
    usable_bytes_.push_back(d.usable_memory_bytes());
  }
  start_bytes_.assign(n, 0);
  inputs_.resize(n);
  for (int32_t op = 0; op < n; ++op) {
    const Op& o = graph.op(op);
    start_bytes_[op] = o.temporary_bytes;
    for (const TensorSpec& t : o.outputs) {
      if (!t.aliases_persistent) start_bytes_[op] = SaturatingAddBytes(start_bytes_[op], t.bytes);
    }
    std::vector<std::pair<int32_t, int32_t>> seen;  // (producer, output): a tensor read twice is held once
    for (int32_t e : graph.in_data_edges(op)) {
      const DataEdge& edge = edges[e];
      if (std::find(seen.begin(), seen.end(), std::pair{edge.src, edge.src_output}) != seen.end()) continue;
      seen.push_back({edge.src, edge.src_output});
      const TensorSpec& t = graph.op(edge.src).outputs[edge.src_output];
      inputs_[op].push_back({edge.src, t.bytes, t.aliases_persistent ? 0 : t.bytes});
    }
  }
  start_us_.resize(static_cast<size_t>(n) * D);
  tail_us_.resize(static_cast<size_t>(n) * D);
  min_finish_us_.resize(n);
  min_tail_us_.resize(n);
  jobs_of_device_.resize(D);
  jobs_of_channel_.resize(cluster.num_channels());
  consumer_tail_us_.resize(D);
  for (int32_t op = 0; op < n; ++op) {
    const Op& o = graph.op(op);
    std::vector<Tensor> outputs(o.outputs.size());
    for (size_t k = 0; k < outputs.size(); ++k) outputs[k] = {op, o.outputs[k].bytes, {}};
    for (int32_t e : graph.out_data_edges(op)) {
      std::vector<int32_t>& consumers = outputs[edges[e].src_output].consumers;
      if (std::find(consumers.begin(), consumers.end(), edges[e].dst) == consumers.end())
        consumers.push_back(edges[e].dst);
    }
    for (Tensor& t : outputs) {
      if (!t.consumers.empty()) tensors_.push_back(std::move(t));
    }
  }
}

// (d) of the proof: the hops of each tensor whose trip is known, as jobs on
// their channels.
void PartialBound::AddTransferJobs(std::span<const int32_t> device_of_unit) const {
  const int32_t D = num_devices_;
  for (const Tensor& tensor : tensors_) {
    const int32_t from = device_of_unit[unit_of_op_[tensor.producer]];
    if (from == kFree) continue;
    std::fill(consumer_tail_us_.begin(), consumer_tail_us_.end(), -1.0);  // -1: no fixed reader there
    for (int32_t c : tensor.consumers) {
      const int32_t to = device_of_unit[unit_of_op_[c]];
      if (to == kFree || to == from) continue;
      consumer_tail_us_[to] = std::max(consumer_tail_us_[to], time_us_[c * D + to] + tail_us_[c * D + to]);
    }
    const double finish_us = start_us_[tensor.producer * D + from] + time_us_[tensor.producer * D + from];
    for (int32_t to = 0; to < D; ++to) {
      if (consumer_tail_us_[to] < 0) continue;
      const auto route = cluster_.Route(from, to);
      double route_us = 0;
      for (const Hop& hop : route) route_us += cluster_.HopTimeUs(hop, tensor.bytes);
      double before_us = 0;
      for (const Hop& hop : route) {
        const double hop_us = cluster_.HopTimeUs(hop, tensor.bytes);
        jobs_of_channel_[hop.channel].push_back(
            {finish_us + before_us, hop_us, (route_us - before_us - hop_us) + consumer_tail_us_[to]});
        before_us += hop_us;
      }
    }
  }
}

void PartialBound::EarliestStarts(std::span<const int32_t> device_of_unit) const {
  const int32_t D = num_devices_;
  const auto& edges = graph_.data_edges();
  for (int32_t op : graph_.topological_order()) {
    const int32_t fixed = device_of_unit[unit_of_op_[op]];
    double control_ready_us = 0;
    for (int32_t q : graph_.control_predecessors(op)) control_ready_us = std::max(control_ready_us, min_finish_us_[q]);
    double min_finish_us = kInfinity;
    for (int32_t d = 0; d < D; ++d) {
      double& start_us = start_us_[op * D + d];
      const double time_us = time_us_[op * D + d];
      if ((fixed != kFree && d != fixed) || time_us == kInfinity) {
        start_us = kInfinity;
        continue;
      }
      start_us = control_ready_us;
      for (int32_t e : graph_.in_data_edges(op)) {
        const int32_t q = edges[e].src;
        double arrival_us = kInfinity;
        for (int32_t p = 0; p < D; ++p) {
          const double finish_us = start_us_[q * D + p] + time_us_[q * D + p];
          arrival_us = std::min(arrival_us, p == d ? finish_us : finish_us + TransferUs(e, p, d));
        }
        start_us = std::max(start_us, arrival_us);
      }
      min_finish_us = std::min(min_finish_us, start_us + time_us);
    }
    min_finish_us_[op] = min_finish_us;
  }
}

void PartialBound::ShortestTails(std::span<const int32_t> device_of_unit) const {
  const int32_t D = num_devices_;
  const auto& edges = graph_.data_edges();
  const auto& order = graph_.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int32_t op = *it;
    double control_tail_us = 0;
    for (int32_t s : graph_.control_successors(op)) control_tail_us = std::max(control_tail_us, min_tail_us_[s]);
    double min_with_time_us = kInfinity;
    for (int32_t d = 0; d < D; ++d) {
      double& tail_us = tail_us_[op * D + d];
      if (start_us_[op * D + d] == kInfinity) {  // op cannot be on d
        tail_us = kInfinity;
        continue;
      }
      tail_us = control_tail_us;
      for (int32_t e : graph_.out_data_edges(op)) {
        const int32_t s = edges[e].dst;
        double after_us = kInfinity;
        for (int32_t d2 = 0; d2 < D; ++d2) {
          const double rest_us = time_us_[s * D + d2] + tail_us_[s * D + d2];
          after_us = std::min(after_us, d2 == d ? rest_us : TransferUs(e, d, d2) + rest_us);
        }
        tail_us = std::max(tail_us, after_us);
      }
      min_with_time_us = std::min(min_with_time_us, time_us_[op * D + d] + tail_us);
    }
    min_tail_us_[op] = min_with_time_us;
  }
}

double PartialBound::ContentionBoundUs(std::vector<Job>& jobs, int32_t slots) {
  double bound_us = 0;
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.head_us > b.head_us; });
  double total_us = 0, min_tail_us = kInfinity;
  for (const Job& job : jobs) {
    total_us += job.time_us;
    min_tail_us = std::min(min_tail_us, job.tail_us);
    bound_us = std::max(bound_us, job.head_us + total_us / slots + min_tail_us);
  }
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.tail_us > b.tail_us; });
  double min_head_us = kInfinity;
  total_us = 0;
  for (const Job& job : jobs) {
    total_us += job.time_us;
    min_head_us = std::min(min_head_us, job.head_us);
    bound_us = std::max(bound_us, min_head_us + total_us / slots + job.tail_us);
  }
  return bound_us;
}

double PartialBound::StepTimeLowerBoundUs(std::span<const int32_t> device_of_unit) const {
  const int32_t D = num_devices_;
  EarliestStarts(device_of_unit);
  ShortestTails(device_of_unit);
  double bound_us = 0;
  jobs_.clear();
  for (auto& jobs : jobs_of_device_) jobs.clear();
  for (int32_t op = 0; op < graph_.num_ops(); ++op) {
    bound_us = std::max(bound_us, min_finish_us_[op]);  // (a)
    const int32_t fixed = device_of_unit[unit_of_op_[op]];
    if (fixed != kFree) {
      const size_t i = static_cast<size_t>(op) * D + fixed;
      jobs_of_device_[fixed].push_back({start_us_[i], time_us_[i], tail_us_[i]});
      jobs_.push_back(jobs_of_device_[fixed].back());
    } else {
      double head_us = kInfinity, tail_us = kInfinity;
      for (int32_t d = 0; d < D; ++d) {
        head_us = std::min(head_us, start_us_[op * D + d]);
        tail_us = std::min(tail_us, tail_us_[op * D + d]);
      }
      jobs_.push_back({head_us, fastest_us_[op], tail_us});
    }
  }
  for (int32_t d = 0; d < D; ++d)
    bound_us = std::max(bound_us, ContentionBoundUs(jobs_of_device_[d], parallel_ops_[d]));  // (b)
  bound_us = std::max(bound_us, ContentionBoundUs(jobs_, total_slots_));                     // (c)
  for (auto& jobs : jobs_of_channel_) jobs.clear();
  AddTransferJobs(device_of_unit);
  for (auto& jobs : jobs_of_channel_) bound_us = std::max(bound_us, ContentionBoundUs(jobs, 1));  // (d)
  return bound_us * (1 - kRoundingSlack);
}

// The simulator holds a device's persistent bytes (its ops' parameters) all
// step, and never frees below them. When an op starts it allocates its
// outputs and scratch, and at that moment each of its input tensors is still
// held on its device: a local one until its last local reader (this op among
// them) has run, a copy from elsewhere until its last reader on this device
// has run. So memory in use then is at least persistent + inputs + start
// bytes; a fixed op whose producers are free is charged the smaller of the
// two ways its input may be held (local_bytes <= remote_bytes). The
// simulator marks a device out of memory when its peak (above zero) passes
// its usable memory.
bool PartialBound::MustRunOutOfMemory(std::span<const int32_t> device_of_unit) const {
  const int32_t D = num_devices_;
  std::vector<int64_t> persistent_bytes(D, 0), op_peak_bytes(D, 0);
  for (int32_t op = 0; op < graph_.num_ops(); ++op) {
    const int32_t d = device_of_unit[unit_of_op_[op]];
    if (d == kFree) continue;
    persistent_bytes[d] = SaturatingAddBytes(persistent_bytes[d], graph_.op(op).persistent_bytes);
    int64_t bytes = start_bytes_[op];
    for (const Input& input : inputs_[op]) {
      const int32_t from = device_of_unit[unit_of_op_[input.producer]];
      bytes = SaturatingAddBytes(bytes, from == d || from == kFree ? input.local_bytes : input.remote_bytes);
    }
    op_peak_bytes[d] = std::max(op_peak_bytes[d], bytes);
  }
  for (int32_t d = 0; d < D; ++d) {
    const int64_t peak_bytes = SaturatingAddBytes(persistent_bytes[d], op_peak_bytes[d]);
    if (peak_bytes > 0 && peak_bytes > usable_bytes_[d]) return true;
  }
  return false;
}

// Swapping two devices relabels the simulation exactly when nothing in it
// depends on the devices' positions. The simulator breaks ties by device
// position in two places: transfers of one tensor to several devices that
// queue on one channel (a shared bus, or a staged route's common first hop),
// and the choice among equally good multi-hop routes. With exactly one
// direct link between every pair of devices and no buses, every route is
// that one link and each channel carries transfers to one device only, so
// neither tie can arise. Then two devices with the same specification, the
// same op times and equal links to every third device can trade places.
std::vector<std::vector<int32_t>> InterchangeableDevices(const Graph& graph, const Cluster& cluster,
                                                         const CostModel& cost) {
  const int32_t D = cluster.num_devices();
  if (!cluster.buses.empty()) return {};
  for (const Link& link : cluster.links) {
    if (link.bus >= 0) return {};
  }
  for (int32_t a = 0; a < D; ++a) {
    for (int32_t b = a + 1; b < D; ++b) {
      if (LinkBetween(cluster, a, b) < 0) return {};
    }
  }
  auto interchangeable = [&](int32_t i, int32_t j) {
    if (!SameDevice(cluster.devices[i], cluster.devices[j])) return false;
    for (const Op& op : graph.ops()) {
      if (cost.OpTimeUs(op, i) != cost.OpTimeUs(op, j)) return false;
    }
    for (int32_t x = 0; x < D; ++x) {
      if (x == i || x == j) continue;
      const Link& ix = cluster.links[LinkBetween(cluster, i, x)];
      const Link& jx = cluster.links[LinkBetween(cluster, j, x)];
      if (!SameLinkSpeed(ix, jx)) return false;
    }
    return true;
  };
  // The relation is transitive (equal specifications, and equal links to
  // third devices chain through), so comparing with a class's first device
  // suffices.
  std::vector<std::vector<int32_t>> classes;
  for (int32_t d = 0; d < D; ++d) {
    auto it =
        std::find_if(classes.begin(), classes.end(), [&](const auto& c) { return interchangeable(c.front(), d); });
    if (it == classes.end()) {
      classes.push_back({d});
    } else {
      it->push_back(d);
    }
  }
  std::erase_if(classes, [](const auto& c) { return c.size() < 2; });
  return classes;
}

}  // namespace exact

namespace {

using exact::kFree;
using Clock = std::chrono::steady_clock;

// The one-shot placement the search starts from, and what `exact` returns
// when it cannot search.
struct Incumbent {
  Placement placement;
  double step_time_us = std::numeric_limits<double>::infinity();  // infinite while none ran
  std::string method;                                             // which placer gave it, or "exact"
};

struct Seeds {
  Incumbent best;      // the fastest that ran, if any did
  Placement fallback;  // for when none ran: the one that overflows memory least (search_cost.h)
  int64_t evaluations = 0;
};

// The search's first incumbents: a few cheap placers, since each costs an
// evaluation of the budget. `expert` only for graphs that carry expert
// stages (otherwise it is single_gpu again).
std::vector<std::string> SearchSeedMethods(const PlacementProblem& problem) {
  std::vector<std::string> methods = {"single_gpu", "m_etf", "m_sct"};
  if (problem.graph.expert_stages > 0) methods.insert(methods.begin() + 1, "expert");
  return methods;
}

// The best of `methods`; a placer that refuses the problem is skipped.
Seeds RunOneShotPlacers(const PlacementProblem& problem, const std::vector<std::string>& methods) {
  Seeds seeds;
  std::vector<PlacerRun> runs = RunPlacers(problem, methods);
  seeds.evaluations = static_cast<int64_t>(runs.size());
  if (const PlacerRun* best = BestStart(runs, problem.cluster)) {
    seeds.fallback = best->placement;
    if (best->result.ok()) seeds.best = {best->placement, best->result.step_time_us, best->method};
  }
  return seeds;
}

struct Budget {
  int64_t max_evaluations = 0;  // 0: none
  int64_t max_nodes = 0;        // 0: none
  double max_seconds = 0;       // 0: none
};

Budget BudgetOf(const SearchBudget& given) {
  Budget budget{given.max_evaluations, 0, given.max_seconds};
  if (budget.max_evaluations <= 0 && budget.max_seconds <= 0) budget.max_evaluations = exact::kDefaultMaxEvaluations;
  if (budget.max_evaluations > 0) budget.max_nodes = budget.max_evaluations * exact::kNodesPerEvaluation;
  return budget;
}

// Units with one possible device first (they add no branching and their
// load counts from the start), then by compute on their fastest devices,
// heaviest first; ties by unit index.
std::vector<int32_t> SearchOrder(const PlacementProblem& problem, const Grouping& units,
                                 const exact::PartialBound& bound) {
  std::vector<double> weight_us(units.num_groups(), 0);
  for (int32_t u = 0; u < units.num_groups(); ++u) {
    for (int32_t op : units.groups[u].ops) {
      double fastest_us = std::numeric_limits<double>::infinity();
      for (int32_t d : bound.allowed_devices(u)) {
        fastest_us = std::min(fastest_us, problem.cost.OpTimeUs(problem.graph.op(op), d));
      }
      weight_us[u] += fastest_us;
    }
  }
  std::vector<int32_t> order(units.num_groups());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const bool forced_a = bound.allowed_devices(a).size() == 1, forced_b = bound.allowed_devices(b).size() == 1;
    if (forced_a != forced_b) return forced_a;
    return weight_us[a] > weight_us[b];
  });
  return order;
}

class BranchAndBound {
 public:
  BranchAndBound(const PlacementProblem& problem, const Grouping& units, Incumbent incumbent,
                 int64_t evaluations_so_far)
      : problem_(problem),
        units_(units),
        bound_(problem.graph, problem.cluster, problem.cost, units),
        order_(SearchOrder(problem, units, bound_)),
        budget_(BudgetOf(problem.budget)),
        best_(std::move(incumbent)),
        evaluations_(evaluations_so_far),
        device_of_unit_(units.num_groups(), kFree),
        units_on_device_(problem.cluster.num_devices(), 0),
        class_of_device_(problem.cluster.num_devices(), -1),
        start_(Clock::now()) {
    const auto classes = exact::InterchangeableDevices(problem.graph, problem.cluster, problem.cost);
    for (size_t c = 0; c < classes.size(); ++c) {
      for (int32_t d : classes[c]) class_of_device_[d] = static_cast<int32_t>(c);
    }
  }

  // Searches until the tree is exhausted (true: the incumbent is optimal)
  // or the budget runs out (false).
  bool Run() {
    Descend(0);
    return !out_of_budget_;
  }

  const Incumbent& best() const { return best_; }
  int64_t evaluations() const { return evaluations_; }
  int64_t nodes() const { return nodes_; }

 private:
  struct Child {
    double bound_us;
    int32_t device;
  };

  void Descend(int32_t depth) {
    if (depth == units_.num_groups()) {
      Evaluate();
      return;
    }
    const int32_t unit = order_[depth];
    std::vector<Child> children;
    for (int32_t d : bound_.allowed_devices(unit)) {
      if (!WorthTrying(d)) continue;
      if (OutOfBudget()) break;
      ++nodes_;
      device_of_unit_[unit] = d;
      if (!bound_.MustRunOutOfMemory(device_of_unit_)) {
        const double bound_us = bound_.StepTimeLowerBoundUs(device_of_unit_);
        if (bound_us < best_.step_time_us) children.push_back({bound_us, d});
      }
    }
    device_of_unit_[unit] = kFree;
    if (out_of_budget_) return;
    std::sort(children.begin(), children.end(), [](const Child& a, const Child& b) {
      return a.bound_us != b.bound_us ? a.bound_us < b.bound_us : a.device < b.device;
    });
    for (const Child& child : children) {
      if (out_of_budget_) return;
      if (child.bound_us >= best_.step_time_us) break;  // sorted: the rest are no better
      device_of_unit_[unit] = child.device;
      ++units_on_device_[child.device];
      Descend(depth + 1);
      --units_on_device_[child.device];
    }
    device_of_unit_[unit] = kFree;
  }

  // Symmetry: of the unused devices of one interchangeable class, only the
  // first. Any placement relabels, within classes, to one that uses each
  // class's devices in order of first use, with the same simulation.
  bool WorthTrying(int32_t d) const {
    const int32_t c = class_of_device_[d];
    if (c < 0 || units_on_device_[d] > 0) return true;
    for (int32_t other = 0; other < d; ++other) {
      if (class_of_device_[other] == c && units_on_device_[other] == 0) return false;
    }
    return true;
  }

  void Evaluate() {
    if (budget_.max_evaluations > 0 && evaluations_ >= budget_.max_evaluations) {
      out_of_budget_ = true;
      return;
    }
    Placement placement = ExpandGroupPlacement(units_, device_of_unit_);
    const SimResult result = problem_.simulator.Run(placement);
    ++evaluations_;
    if (result.ok() && result.step_time_us < best_.step_time_us) {
      best_ = {std::move(placement), result.step_time_us, "exact"};
    }
    if (problem_.progress && evaluations_ % 1000 == 0) {
      SearchProgress progress;
      progress.evaluations = evaluations_;
      progress.best_step_time_us =
          best_.step_time_us == std::numeric_limits<double>::infinity() ? 0 : best_.step_time_us;
      progress.current_step_time_us = result.step_time_us;
      progress.seconds = Seconds();
      problem_.progress(progress);
    }
  }

  bool OutOfBudget() {
    if (out_of_budget_) return true;
    if (StopRequested()) out_of_budget_ = true;
    if (budget_.max_nodes > 0 && nodes_ >= budget_.max_nodes) out_of_budget_ = true;
    // The clock only now and then: it costs more than a node of a small graph.
    if (budget_.max_seconds > 0 && nodes_ % 64 == 0 && Seconds() >= budget_.max_seconds) out_of_budget_ = true;
    return out_of_budget_;
  }

  double Seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  const PlacementProblem& problem_;
  const Grouping& units_;
  exact::PartialBound bound_;
  std::vector<int32_t> order_;
  Budget budget_;
  Incumbent best_;
  int64_t evaluations_;
  int64_t nodes_ = 0;
  bool out_of_budget_ = false;
  std::vector<int32_t> device_of_unit_;
  std::vector<int32_t> units_on_device_;
  std::vector<int32_t> class_of_device_;  // -1: alone in its class
  Clock::time_point start_;
};

}  // namespace

PlacerOutput PlaceExact(const PlacementProblem& problem) {
  const Grouping units = ConstraintGroups(problem.graph);
  CheckGroupsCanRun(problem.graph, problem.cluster, units);
  PlacerOutput out;
  const bool too_large = units.num_groups() > exact::kMaxUnits;
  // Where there is no search, the answer is the best of every one-shot
  // baseline: a user asking for the optimum must not get less than
  // `compare`'s fastest baseline.
  Seeds seeds = RunOneShotPlacers(problem, too_large ? OneShotBaselineNames() : SearchSeedMethods(problem));
  if (seeds.fallback.empty() && StopRequested()) throw Stopped();  // stopped before any baseline gave a placement
  const bool any_ran = seeds.best.step_time_us < std::numeric_limits<double>::infinity();

  if (too_large) {
    out.placement = any_ran ? seeds.best.placement : seeds.fallback;
    out.evaluations = seeds.evaluations;
    out.note = "the graph has " + std::to_string(units.num_groups()) + " units, more than the " +
               std::to_string(exact::kMaxUnits) + " it can search; returned the best one-shot baseline (" +
               (any_ran ? seeds.best.method : "none fits in memory; the one that overflows least") + ")";
    return out;
  }

  BranchAndBound search(problem, units, seeds.best, seeds.evaluations);
  const bool proven = search.Run();
  const Incumbent& best = search.best();
  const bool found = best.step_time_us < std::numeric_limits<double>::infinity();
  out.placement = found ? best.placement : seeds.fallback;
  out.evaluations = search.evaluations();
  const std::string counts =
      std::to_string(search.evaluations()) + " evaluations, " + std::to_string(search.nodes()) + " nodes";
  if (!found) {
    out.note = proven ? "every placement runs out of memory (proven; " + counts + ")"
                      : "budget ran out after " + counts + " with no placement that fits in memory";
  } else if (proven) {
    out.note = "proven optimal (" + counts + ")";
  } else {
    out.note = "budget ran out after " + counts + "; best found, not proven optimal";
  }
  return out;
}

}  // namespace devplace
