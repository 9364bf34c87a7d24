#include "sim/simulator.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_map>

#include "util/error.h"

namespace devplace {

namespace {

enum class EventKind : uint8_t { kOpDone, kHopDone };

struct Event {
  double time_us;
  // Events at one instant are all handled before anything starts at that
  // instant, so their order among themselves changes no result; the
  // sequence keeps even the trace's order reproducible.
  uint64_t sequence;
  EventKind kind;
  int32_t id;         // op index or transfer index

  // std::priority_queue is a max-heap; invert for earliest-first.
  bool operator<(const Event& other) const {
    if (time_us != other.time_us) return time_us > other.time_us;
    return sequence > other.sequence;
  }
};

// One tensor on its way to one destination device.
struct Transfer {
  int32_t tensor;
  int32_t src_op;
  int32_t dst_device;
  int32_t next_hop;             // index into the route
  int32_t consumers_remaining;  // consumer edges on dst_device still to run
  std::span<const Hop> route;
};

// A FIFO queue of indices that reuses its storage across runs.
class Fifo {
 public:
  void Clear() {
    items_.clear();
    head_ = 0;
  }
  bool empty() const { return head_ == items_.size(); }
  void Push(int32_t v) { items_.push_back(v); }
  int32_t Pop() { return items_[head_++]; }

 private:
  std::vector<int32_t> items_;
  size_t head_ = 0;
};

}  // namespace

struct Simulator::Scratch {
  std::vector<int32_t> device;        // per slot: the placement, in slot order
  std::vector<int32_t> pending;       // per op
  std::vector<int32_t> refcount;      // per tensor, on its producer's device
  std::vector<int32_t> copy_of;       // [tensor * devices + device] -> transfer
  std::vector<Transfer> transfers;
  std::vector<Fifo> ready;            // per device
  std::vector<int32_t> running;       // per device
  std::vector<int64_t> memory_in_use; // per device
  std::vector<Fifo> channel_queue;    // per channel: transfers waiting
  std::vector<char> channel_busy;
  std::vector<int32_t> count_on_device;  // per device, scratch for one tensor
  std::vector<Event> heap;
  // What the events of the current instant released, queued only once
  // they all ran, in the tie rules' order (docs/simulator.md).
  std::vector<int32_t> newly_ready;     // slots
  std::vector<int32_t> arriving;        // transfers reaching a channel
  std::vector<int32_t> freed_channels;  // channels that went idle
};

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
  std::vector<int32_t> pending(n, 0);
  for (const DataEdge& e : graph.data_edges()) ++pending[e.dst];
  for (const ControlEdge& e : graph.control_edges()) ++pending[e.dst];
  std::vector<int32_t> topological;
  topological.reserve(n);
  for (int32_t op = 0; op < n; ++op) {
    if (pending[op] == 0) topological.push_back(op);
  }
  for (size_t i = 0; i < topological.size(); ++i) {
    const int32_t op = topological[i];
    for (int32_t e : graph.out_data_edges(op)) {
      if (--pending[graph.data_edges()[e].dst] == 0) topological.push_back(graph.data_edges()[e].dst);
    }
    for (int32_t next : graph.control_successors(op)) {
      if (--pending[next] == 0) topological.push_back(next);
    }
  }
  assert(static_cast<int32_t>(topological.size()) == n);  // Finalize rejected cycles
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

}  // namespace

Simulator::Simulator(const Graph& graph, const Cluster& cluster, const CostModel& cost)
    : graph_(&graph), cluster_(&cluster), num_devices_(cluster.num_devices()), scratch_(std::make_unique<Scratch>()) {
  assert(graph.finalized());
  const int32_t n = graph.num_ops();
  // Ops are renumbered in canonical topological order ("slots"): a run
  // sweeps its arrays mostly front to back, and a slot is the op's rank,
  // which breaks every tie.
  order_ = CanonicalOrder(graph);
  std::vector<int32_t> slot_of(n);
  for (int32_t i = 0; i < n; ++i) slot_of[order_[i]] = i;

  op_time_us_.resize(static_cast<size_t>(n) * num_devices_);
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t d = 0; d < num_devices_; ++d) op_time_us_[i * num_devices_ + d] = cost.OpTimeUs(graph.op(order_[i]), d);
  }

  pending_inputs_.assign(n, 0);
  for (const DataEdge& e : graph.data_edges()) ++pending_inputs_[slot_of[e.dst]];
  for (const ControlEdge& e : graph.control_edges()) ++pending_inputs_[slot_of[e.dst]];

  tensor_begin_.assign(n + 1, 0);
  for (int32_t i = 0; i < n; ++i) {
    tensor_begin_[i + 1] = tensor_begin_[i] + static_cast<int32_t>(graph.op(order_[i]).outputs.size());
  }
  const int32_t num_tensors = tensor_begin_[n];
  tensor_bytes_.resize(num_tensors);
  tensor_producer_.resize(num_tensors);
  tensor_local_bytes_.resize(num_tensors);
  for (int32_t i = 0; i < n; ++i) {
    const Op& op = graph.op(order_[i]);
    for (size_t k = 0; k < op.outputs.size(); ++k) {
      tensor_bytes_[tensor_begin_[i] + k] = op.outputs[k].bytes;
      tensor_local_bytes_[tensor_begin_[i] + k] = op.outputs[k].aliases_persistent ? 0 : op.outputs[k].bytes;
      tensor_producer_[tensor_begin_[i] + k] = i;
    }
  }

  // Consumers per tensor, by rank.
  consumer_begin_.assign(num_tensors + 1, 0);
  for (const DataEdge& e : graph.data_edges()) ++consumer_begin_[tensor_begin_[slot_of[e.src]] + e.src_output + 1];
  for (int32_t t = 0; t < num_tensors; ++t) consumer_begin_[t + 1] += consumer_begin_[t];
  consumers_.resize(graph.data_edges().size());
  {
    std::vector<int32_t> cursor(consumer_begin_.begin(), consumer_begin_.end() - 1);
    for (int32_t i = 0; i < n; ++i) {
      for (int32_t e : graph.out_data_edges(order_[i])) {
        const DataEdge& edge = graph.data_edges()[e];
        consumers_[cursor[tensor_begin_[i] + edge.src_output]++] = slot_of[edge.dst];
      }
    }
    for (int32_t t = 0; t < num_tensors; ++t) {
      std::sort(consumers_.begin() + consumer_begin_[t], consumers_.begin() + consumer_begin_[t + 1]);
    }
  }
  input_begin_.assign(n + 1, 0);
  inputs_.clear();
  inputs_.reserve(graph.data_edges().size());
  control_begin_.assign(n + 1, 0);
  control_successors_.clear();
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t e : graph.in_data_edges(order_[i])) {
      const DataEdge& edge = graph.data_edges()[e];
      inputs_.push_back(tensor_begin_[slot_of[edge.src]] + edge.src_output);
    }
    std::sort(inputs_.begin() + input_begin_[i], inputs_.end());
    input_begin_[i + 1] = static_cast<int32_t>(inputs_.size());
    for (int32_t next : graph.control_successors(order_[i])) control_successors_.push_back(slot_of[next]);
    std::sort(control_successors_.begin() + control_begin_[i], control_successors_.end());
    control_begin_[i + 1] = static_cast<int32_t>(control_successors_.size());
  }

  op_phase_.resize(n);
  op_start_bytes_.resize(n);
  op_temporary_bytes_.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    const Op& op = graph.op(order_[i]);
    op_phase_[i] = static_cast<uint8_t>(op.phase);
    op_temporary_bytes_[i] = op.temporary_bytes;
    op_start_bytes_[i] = op.temporary_bytes;
    for (int32_t t = tensor_begin_[i]; t < tensor_begin_[i + 1]; ++t) {
      op_start_bytes_[i] = SaturatingAddBytes(op_start_bytes_[i], tensor_local_bytes_[t]);
    }
  }
  for (const Device& d : cluster.devices) parallel_ops_.push_back(d.parallel_ops);

  // Co-location is checked by op index, against the group's first op by
  // rank.
  colocation_leader_.resize(n);
  std::unordered_map<std::string, int32_t> leader_of_group;
  for (int32_t op : order_) {
    const std::string& group = graph.op(op).colocation_group;
    colocation_leader_[op] = group.empty() ? op : leader_of_group.emplace(group, op).first->second;
  }
}

Simulator::~Simulator() = default;
Simulator::Simulator(Simulator&&) noexcept = default;

double Simulator::PlainPassUs(const Placement& placement) const {
  const int32_t n = graph_->num_ops();
  std::vector<double> finish_us(n, 0);
  std::vector<double> control_ready_us(n, 0);
  double end_us = 0;
  for (int32_t i = 0; i < n; ++i) {  // slots are in topological order
    double start_us = control_ready_us[i];
    for (int32_t slot = input_begin_[i]; slot < input_begin_[i + 1]; ++slot) {
      start_us = std::max(start_us, finish_us[tensor_producer_[inputs_[slot]]]);
    }
    finish_us[i] = start_us + op_time_us_[i * num_devices_ + placement[order_[i]]];
    for (int32_t slot = control_begin_[i]; slot < control_begin_[i + 1]; ++slot) {
      control_ready_us[control_successors_[slot]] = std::max(control_ready_us[control_successors_[slot]], finish_us[i]);
    }
    end_us = std::max(end_us, finish_us[i]);
  }
  return end_us;
}

SimResult Simulator::Run(const Placement& placement, const SimOptions& options) {
  const Graph& graph = *graph_;
  const Cluster& cluster = *cluster_;
  const int32_t n = graph.num_ops();
  const int32_t D = num_devices_;
  SimResult result;
  result.devices.assign(D, DeviceStats{});

  // Placements that cannot run at all.
  if (static_cast<int32_t>(placement.size()) != n) {
    result.invalid = true;
    result.reason = "the placement has " + std::to_string(placement.size()) + " entries for " + std::to_string(n) + " ops";
    return result;
  }
  Scratch& s = *scratch_;
  s.device.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    const int32_t op = order_[i];
    const int32_t d = placement[op];
    s.device[i] = d;
    if (d < 0 || d >= D) {
      result.invalid = true;
      result.reason = "op '" + ForMessage(graph.op(op).name) + "' is on no device of the cluster";
      return result;
    }
    if (op_time_us_[i * D + d] == kCannotRun) {
      result.invalid = true;
      result.reason = "op '" + ForMessage(graph.op(op).name) + "' (" + ForMessage(graph.op(op).type) + ") cannot run on " +
                      ForMessage(cluster.devices[d].name);
      return result;
    }
    const int32_t leader_device = placement[colocation_leader_[op]];
    if (leader_device != d && leader_device >= 0 && leader_device < D) {
      result.invalid = true;
      result.reason = "co-location group '" + ForMessage(graph.op(op).colocation_group) + "' is split across " +
                      ForMessage(cluster.devices[leader_device].name) + " and " + ForMessage(cluster.devices[d].name);
      return result;
    }
  }

  Random random(options.seed);
  const bool noisy = options.noise.enabled();
  if (noisy && options.noise.failure_probability > 0 && random.Uniform() < options.noise.failure_probability) {
    result.failed = true;
    result.reason = "sporadic failure (noise model)";
  }
  const double jitter = options.noise.jitter;
  auto perturb = [&](double time_us) {
    if (jitter <= 0) return time_us;
    return time_us * std::exp(jitter * random.Normal() - 0.5 * jitter * jitter);
  };

  s.pending.assign(pending_inputs_.begin(), pending_inputs_.end());
  s.refcount.resize(tensor_bytes_.size());
  s.copy_of.resize(tensor_bytes_.size() * D);  // entries are written before they are read
  s.transfers.clear();
  s.ready.resize(D);
  for (Fifo& f : s.ready) f.Clear();
  s.running.assign(D, 0);
  s.memory_in_use.assign(D, 0);
  s.channel_queue.resize(cluster.num_channels());
  for (Fifo& f : s.channel_queue) f.Clear();
  s.channel_busy.assign(cluster.num_channels(), 0);
  s.count_on_device.assign(D, 0);
  s.heap.clear();

  s.newly_ready.clear();
  s.arriving.clear();
  s.freed_channels.clear();

  uint64_t sequence = 0;
  double now_us = 0;
  bool stop = false;
  auto schedule = [&](double time_us, EventKind kind, int32_t id) {
    s.heap.push_back({time_us, sequence++, kind, id});
    std::push_heap(s.heap.begin(), s.heap.end());
  };
  // Memory in use never wraps: a device whose count would pass int64's
  // limit stays at the limit (far over any capacity) for the rest of the
  // step, frees included.
  auto change_memory = [&](int32_t d, int64_t delta) {
    int64_t& in_use = s.memory_in_use[d];
    if (in_use == kSaturatedBytes) return;
    in_use = SaturatingAddBytes(in_use, delta);
    DeviceStats& stats = result.devices[d];
    if (in_use > stats.peak_memory_bytes) {
      stats.peak_memory_bytes = in_use;
      if (in_use > cluster.devices[d].usable_memory_bytes() && !stats.oom) {
        stats.oom = true;
        result.oom = true;
        if (options.stop_at_oom) stop = true;
      }
    }
    if (options.record_events) result.memory_events.push_back({d, now_us, in_use});
  };

  // Persistent memory is held from the start.
  for (int32_t op = 0; op < n; ++op) {
    DeviceStats& stats = result.devices[placement[op]];
    stats.persistent_bytes = SaturatingAddBytes(stats.persistent_bytes, graph.op(op).persistent_bytes);
    ++stats.num_ops;
  }
  for (int32_t d = 0; d < D; ++d) {
    if (result.devices[d].persistent_bytes > 0) change_memory(d, result.devices[d].persistent_bytes);
  }
  if (result.oom) {
    result.reason = "out of memory: parameters alone exceed a device's capacity";
    if (stop) return result;
  }

  auto start_ready_ops = [&](int32_t d) {
    const int32_t slots = parallel_ops_[d];
    while (s.running[d] < slots && !s.ready[d].empty()) {
      int32_t op = s.ready[d].Pop();
      ++s.running[d];
      if (op_start_bytes_[op] > 0) change_memory(d, op_start_bytes_[op]);
      double duration_us = perturb(op_time_us_[op * D + d]);
      result.devices[d].compute_us[op_phase_[op]] += duration_us;
      if (options.record_events) result.op_events.push_back({order_[op], d, now_us, now_us + duration_us});
      schedule(now_us + duration_us, EventKind::kOpDone, op);
    }
  };
  // Devices that may be able to start an op once the current instant's
  // events are handled.
  uint64_t dirty_devices = 0;
  auto make_ready = [&](int32_t op) { s.newly_ready.push_back(op); };
  auto release_tensor = [&](int32_t tensor, int32_t d) {
    if (--s.refcount[tensor] == 0 && tensor_local_bytes_[tensor] > 0) change_memory(d, -tensor_local_bytes_[tensor]);
  };
  auto start_hop = [&](int32_t channel) {
    if (s.channel_busy[channel] || s.channel_queue[channel].empty()) return;
    int32_t id = s.channel_queue[channel].Pop();
    Transfer& tr = s.transfers[id];
    const Hop& hop = tr.route[tr.next_hop];
    const int64_t bytes = tensor_bytes_[tr.tensor];
    // The destination's buffer is allocated when the last hop starts.
    if (tr.next_hop + 1 == static_cast<int32_t>(tr.route.size()) && bytes > 0) change_memory(tr.dst_device, bytes);
    double duration_us = perturb(cluster.HopTimeUs(hop, bytes));
    s.channel_busy[channel] = 1;
    DeviceStats& from = result.devices[hop.from];
    DeviceStats& to = result.devices[hop.to];
    from.copy_out_us += duration_us;
    from.bytes_out = SaturatingAddBytes(from.bytes_out, bytes);
    to.copy_in_us += duration_us;
    to.bytes_in = SaturatingAddBytes(to.bytes_in, bytes);
    if (options.record_events) {
      result.transfer_events.push_back({order_[tr.src_op], tr.tensor - tensor_begin_[tr.src_op], hop.from, hop.to, channel,
                                        now_us, now_us + duration_us, bytes});
    }
    schedule(now_us + duration_us, EventKind::kHopDone, id);
  };

  auto finish_op = [&](int32_t op) {
    const int32_t d = s.device[op];
    --s.running[d];
    dirty_devices |= uint64_t{1} << d;
    if (op_temporary_bytes_[op] > 0) change_memory(d, -op_temporary_bytes_[op]);

    // Outputs: wake local consumers, send once to each remote device.
    for (int32_t t = tensor_begin_[op]; t < tensor_begin_[op + 1]; ++t) {
      int32_t local = 0;
      int32_t num_remote = 0;
      uint64_t remote_devices = 0;
      for (int32_t slot = consumer_begin_[t]; slot < consumer_begin_[t + 1]; ++slot) {
        int32_t consumer = consumers_[slot];
        int32_t cd = s.device[consumer];
        if (cd == d) {
          ++local;
          if (--s.pending[consumer] == 0) make_ready(consumer);
        } else {
          const uint64_t bit = uint64_t{1} << cd;
          num_remote += (remote_devices & bit) == 0;
          remote_devices |= bit;
          ++s.count_on_device[cd];
        }
      }
      s.refcount[t] = local + num_remote;
      for (int32_t rd = 0; remote_devices != 0; ++rd, remote_devices >>= 1) {
        if (!(remote_devices & 1)) continue;
        int32_t id = static_cast<int32_t>(s.transfers.size());
        s.transfers.push_back({t, op, rd, 0, s.count_on_device[rd], cluster.Route(d, rd)});
        s.count_on_device[rd] = 0;
        s.copy_of[static_cast<size_t>(t) * D + rd] = id;
        s.arriving.push_back(id);
      }
      if (s.refcount[t] == 0 && tensor_local_bytes_[t] > 0) change_memory(d, -tensor_local_bytes_[t]);  // nobody reads it
    }

    // Inputs this op was the last local reader of are freed.
    for (int32_t slot = input_begin_[op]; slot < input_begin_[op + 1]; ++slot) {
      int32_t t = inputs_[slot];
      if (s.device[tensor_producer_[t]] == d) {
        release_tensor(t, d);
      } else {
        Transfer& tr = s.transfers[s.copy_of[static_cast<size_t>(t) * D + d]];
        if (--tr.consumers_remaining == 0 && tensor_bytes_[t] > 0) change_memory(d, -tensor_bytes_[t]);
      }
    }
    for (int32_t slot = control_begin_[op]; slot < control_begin_[op + 1]; ++slot) {
      const int32_t next = control_successors_[slot];
      if (--s.pending[next] == 0) make_ready(next);
    }
  };

  auto finish_hop = [&](int32_t id) {
    Transfer& tr = s.transfers[id];
    int32_t channel = tr.route[tr.next_hop].channel;
    s.channel_busy[channel] = 0;
    s.freed_channels.push_back(channel);
    ++tr.next_hop;
    if (tr.next_hop < static_cast<int32_t>(tr.route.size())) {
      s.arriving.push_back(id);
    } else {
      // Arrived: the sender's copy may go, the receivers may run.
      const int32_t t = tr.tensor;
      release_tensor(t, s.device[tr.src_op]);
      for (int32_t slot = consumer_begin_[t]; slot < consumer_begin_[t + 1]; ++slot) {
        int32_t consumer = consumers_[slot];
        if (s.device[consumer] == tr.dst_device && --s.pending[consumer] == 0) make_ready(consumer);
      }
    }
  };

  // After an instant's events all ran (so every free of the instant came
  // first): queue what they released in the tie rules' order, then start
  // hops on idle channels and ops on idle devices.
  auto start_what_is_ready = [&]() {
    // By rank. Usually already in order (one op's consumers are), and
    // checking is much cheaper than sorting.
    if (!std::is_sorted(s.newly_ready.begin(), s.newly_ready.end())) std::sort(s.newly_ready.begin(), s.newly_ready.end());
    for (int32_t op : s.newly_ready) {
      s.ready[s.device[op]].Push(op);
      dirty_devices |= uint64_t{1} << s.device[op];
    }
    s.newly_ready.clear();
    if (s.arriving.size() > 1) {
      // A transfer is one tensor (producer's rank, output) to one device.
      auto before = [&s](int32_t a, int32_t b) {
        const Transfer& x = s.transfers[a];
        const Transfer& y = s.transfers[b];
        return x.tensor != y.tensor ? x.tensor < y.tensor : x.dst_device < y.dst_device;
      };
      if (!std::is_sorted(s.arriving.begin(), s.arriving.end(), before)) {
        std::sort(s.arriving.begin(), s.arriving.end(), before);
      }
    }
    for (int32_t id : s.arriving) {
      const Transfer& tr = s.transfers[id];
      const int32_t channel = tr.route[tr.next_hop].channel;
      s.channel_queue[channel].Push(id);
      s.freed_channels.push_back(channel);
    }
    s.arriving.clear();
    // Channels in the order they went idle or got work, which the rules
    // above fix; a repeat finds the channel busy.
    for (int32_t channel : s.freed_channels) start_hop(channel);
    s.freed_channels.clear();
    while (dirty_devices != 0) {
      int32_t d = std::countr_zero(dirty_devices);
      dirty_devices &= dirty_devices - 1;
      start_ready_ops(d);
    }
  };

  for (int32_t op = 0; op < n; ++op) {
    if (s.pending[op] == 0) make_ready(op);
  }
  start_what_is_ready();

  while (!s.heap.empty() && !stop) {
    now_us = s.heap.front().time_us;
    do {
      std::pop_heap(s.heap.begin(), s.heap.end());
      const Event event = s.heap.back();
      s.heap.pop_back();
      if (event.kind == EventKind::kOpDone) {
        finish_op(event.id);
      } else {
        finish_hop(event.id);
      }
    } while (!s.heap.empty() && s.heap.front().time_us == now_us);
    start_what_is_ready();
  }
  result.step_time_us = now_us;
  if (result.oom && result.reason.empty()) {
    for (int32_t d = 0; d < D; ++d) {
      if (result.devices[d].oom) {
        result.reason = "out of memory on " + ForMessage(cluster.devices[d].name);
        break;
      }
    }
  }
  return result;
}

}  // namespace devplace
