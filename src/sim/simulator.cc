#include "sim/simulator.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_map>

#include "graph/canonical_order.h"
#include "sim/event_queue.h"
#include "util/error.h"

namespace devplace {

namespace {

// One tensor on its way to one destination device.
struct Transfer {
  int32_t tensor;
  int32_t src_op;
  int32_t dst_device;
  int32_t next_hop;             // index into the route
  int32_t consumers_remaining;  // consumer edges on dst_device still to run
  std::span<const Hop> route;
};

// A list that keeps its storage across runs, with an append that is
// always inlined: std::vector's push_back, a call from the event loop (too
// large for the compiler to inline it into), cost about 4 % of a run's
// instructions. Only growing leaves the loop.
template <typename T>
class InlineList {
 public:
  InlineList() = default;
  InlineList(const InlineList& other) { *this = other; }
  // A copy (a snapshot saved or resumed) takes one allocation at most, as
  // a vector's does; appending one by one would grow it step by step.
  InlineList& operator=(const InlineList& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  // Moves (snapshots kept, and their vector growing) take the storage and
  // leave the other list empty, never a size beyond its storage.
  InlineList(InlineList&& other) noexcept : storage_(std::move(other.storage_)), size_(other.size_) {
    other.storage_.clear();
    other.size_ = 0;
  }
  InlineList& operator=(InlineList&& other) noexcept {
    if (this != &other) {
      storage_ = std::move(other.storage_);
      size_ = other.size_;
      other.storage_.clear();
      other.size_ = 0;
    }
    return *this;
  }

  [[gnu::always_inline]] void push_back(const T& v) {
    if (size_ == storage_.size()) [[unlikely]] Grow();
    storage_.data()[size_++] = v;
  }
  void clear() { size_ = 0; }
  // [first, last) must not lie in this list.
  void assign(const T* first, const T* last) {
    storage_.assign(first, last);
    size_ = storage_.size();
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return storage_.data()[i]; }
  const T& operator[](size_t i) const { return storage_.data()[i]; }
  T* begin() { return storage_.data(); }
  T* end() { return storage_.data() + size_; }
  const T* begin() const { return storage_.data(); }
  const T* end() const { return storage_.data() + size_; }

 private:
  // Up to the capacity a copy left unused, else twice the size.
  [[gnu::noinline]] void Grow() {
    storage_.resize(std::max({size_t{16}, 2 * storage_.size(), storage_.capacity()}));
  }

  std::vector<T> storage_;  // its size is the capacity; entries past size_ are stale
  size_t size_ = 0;
};
using IndexList = InlineList<int32_t>;

// A FIFO queue of indices that reuses its storage across runs.
class Fifo {
 public:
  void Clear() {
    items_.clear();
    head_ = 0;
  }
  bool empty() const { return head_ == items_.size(); }
  [[gnu::always_inline]] void Push(int32_t v) { items_.push_back(v); }
  int32_t Pop() { return items_[head_++]; }

 private:
  IndexList items_;
  size_t head_ = 0;
};

}  // namespace

struct Simulator::Scratch {
  std::vector<int32_t> device;        // per slot: the placement, in slot order
  std::vector<double> time_us;        // per slot: the op's time on its device
  std::vector<int64_t> persistent_bytes;  // per device, for the placement (saturated)
  std::vector<int32_t> num_ops;           // per device
  std::vector<int32_t> pending;       // per op
  std::vector<int32_t> refcount;      // per tensor, on its producer's device
  std::vector<int32_t> copy_of;       // [tensor * devices + device] -> transfer
  InlineList<Transfer> transfers;
  std::vector<Fifo> ready;            // per device
  std::vector<int32_t> running;       // per device: slots taken (by work running or waking it)
  std::vector<double> idle_since_us;  // per device: when it last ran nothing (wake-ups)
  std::vector<int32_t> waking;        // per device: slots taken by work waiting for its wake-up
  std::vector<double> awake_at_us;    // per device: when its wake-up ends, while waking
  // What a run changes of a device's memory, together: memory changes
  // several times per event. The peak goes to the result's DeviceStats as
  // the run ends (FlushPeaks).
  struct DeviceMemory {
    int64_t in_use_bytes = 0;
    int64_t peak_bytes = 0;
    int64_t usable_bytes = 0;  // capacity less the reserve
  };
  std::vector<DeviceMemory> memory;   // per device
  std::vector<Fifo> channel_queue;    // per channel: transfers waiting
  std::vector<char> channel_busy;
  std::vector<int32_t> count_on_device;  // per device, scratch for one tensor
  EventQueue heap;
  // What the events of the current instant released, queued only once
  // they all ran, in the tie rules' order (docs/simulator.md).
  IndexList newly_ready;     // slots
  IndexList arriving;        // transfers reaching a channel
  IndexList freed_channels;  // channels that went idle
  IndexList to_cores;        // transfers whose hop a host core takes next
  // Work whose device's wake-up ended at this instant: an op (slot) or a
  // copy (~transfer id), started when its device's turn comes.
  struct Woken {
    int32_t device;
    int32_t item;
  };
  InlineList<Woken> woken;
};


Simulator::Simulator(const Graph& graph, const Cluster& cluster, const CostModel& cost)
    : graph_(&graph),
      cluster_(&cluster),
      num_devices_(cluster.num_devices()),
      scratch_(std::make_unique<Scratch>()),
      memory_(std::make_unique<Memory>()) {
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
  for (int32_t i = 0; i < n; ++i) {
    if (pending_inputs_[i] == 0) source_slots_.push_back(i);
  }

  tensor_begin_.assign(n + 1, 0);
  for (int32_t i = 0; i < n; ++i) {
    tensor_begin_[i + 1] = tensor_begin_[i] + static_cast<int32_t>(graph.op(order_[i]).outputs.size());
  }
  const int32_t num_tensors = tensor_begin_[n];
  num_tensors_ = num_tensors;
  tensor_.assign(num_tensors + 1, TensorFacts{});
  for (int32_t i = 0; i < n; ++i) {
    const Op& op = graph.op(order_[i]);
    for (size_t k = 0; k < op.outputs.size(); ++k) {
      TensorFacts& tensor = tensor_[tensor_begin_[i] + k];
      tensor.bytes = op.outputs[k].bytes;
      tensor.local_bytes = op.outputs[k].aliases_persistent ? 0 : op.outputs[k].bytes;
      tensor.producer = i;
    }
  }

  // Consumers per tensor, by rank.
  for (const DataEdge& e : graph.data_edges()) ++tensor_[tensor_begin_[slot_of[e.src]] + e.src_output + 1].consumer_begin;
  for (int32_t t = 0; t < num_tensors; ++t) tensor_[t + 1].consumer_begin += tensor_[t].consumer_begin;
  consumers_.resize(graph.data_edges().size());
  {
    std::vector<int32_t> cursor(num_tensors);
    for (int32_t t = 0; t < num_tensors; ++t) cursor[t] = tensor_[t].consumer_begin;
    for (int32_t i = 0; i < n; ++i) {
      for (int32_t e : graph.out_data_edges(order_[i])) {
        const DataEdge& edge = graph.data_edges()[e];
        consumers_[cursor[tensor_begin_[i] + edge.src_output]++] = slot_of[edge.dst];
      }
    }
    for (int32_t t = 0; t < num_tensors; ++t) {
      std::sort(consumers_.begin() + tensor_[t].consumer_begin, consumers_.begin() + tensor_[t + 1].consumer_begin);
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
      inputs_.push_back({tensor_begin_[slot_of[edge.src]] + edge.src_output, slot_of[edge.src]});
    }
    std::sort(inputs_.begin() + input_begin_[i], inputs_.end(),
              [](const InputEdge& a, const InputEdge& b) { return a.tensor < b.tensor; });
    input_begin_[i + 1] = static_cast<int32_t>(inputs_.size());
    for (int32_t next : graph.control_successors(order_[i])) control_successors_.push_back(slot_of[next]);
    std::sort(control_successors_.begin() + control_begin_[i], control_successors_.end());
    control_begin_[i + 1] = static_cast<int32_t>(control_successors_.size());
  }

  op_phase_.resize(n);
  op_start_bytes_.resize(n);
  op_temporary_bytes_.resize(n);
  op_persistent_bytes_.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    const Op& op = graph.op(order_[i]);
    op_phase_[i] = static_cast<uint8_t>(op.phase);
    op_temporary_bytes_[i] = op.temporary_bytes;
    op_persistent_bytes_[i] = op.persistent_bytes;
    op_start_bytes_[i] = op.temporary_bytes;
    for (int32_t t = tensor_begin_[i]; t < tensor_begin_[i + 1]; ++t) {
      op_start_bytes_[i] = SaturatingAddBytes(op_start_bytes_[i], tensor_[t].local_bytes);
    }
  }
  for (const Device& d : cluster.devices) parallel_ops_.push_back(d.parallel_ops);
  int32_t host_devices = 0;
  for (const Device& d : cluster.devices) {
    shares_host_.push_back(d.is_host_cpu());
    host_devices += shares_host_.back();
  }
  for (int32_t from = 0; from < num_devices_; ++from) {
    for (int32_t to = 0; to < num_devices_; ++to) {
      copy_engine_.push_back(cluster.CopyEngine(from, to));
      route_.push_back(cluster.Route(from, to));
    }
  }
  set_copies_use_host_cores(true);
  for (const Device& d : cluster.devices) wakes_ = wakes_ || d.wake_up_us > 0;
  if (host_devices > 1) contention_per_busy_device_ = cost.measured().host_contention() / (host_devices - 1);

  // Co-location is checked by op index, against the group's first op by
  // rank.
  colocation_leader_.resize(n);
  std::unordered_map<std::string, int32_t> leader_of_group;
  for (int32_t op : order_) {
    const std::string& group = graph.op(op).colocation_group;
    colocation_leader_[op] = group.empty() ? op : leader_of_group.emplace(group, op).first->second;
  }
  for (int32_t i = 0; i < n; ++i) {
    if (colocation_leader_[order_[i]] != order_[i]) colocated_slots_.push_back(i);
  }

  // Each slot's predecessors (data and control), for incremental runs: a
  // changed op matters from the first instant one of them finishes.
  slot_of_ = std::move(slot_of);
  producer_begin_.assign(n + 1, 0);
  for (const DataEdge& e : graph.data_edges()) ++producer_begin_[slot_of_[e.dst] + 1];
  for (const ControlEdge& e : graph.control_edges()) ++producer_begin_[slot_of_[e.dst] + 1];
  for (int32_t i = 0; i < n; ++i) producer_begin_[i + 1] += producer_begin_[i];
  producers_.resize(producer_begin_[n]);
  {
    std::vector<int32_t> cursor(producer_begin_.begin(), producer_begin_.end() - 1);
    for (const DataEdge& e : graph.data_edges()) producers_[cursor[slot_of_[e.dst]]++] = slot_of_[e.src];
    for (const ControlEdge& e : graph.control_edges()) producers_[cursor[slot_of_[e.dst]]++] = slot_of_[e.src];
  }
  may_saturate_ = MaySaturate();
}

namespace {

// |bytes|, which fits uint64 even for int64's lowest value.
uint64_t MagnitudeOf(int64_t bytes) { return bytes < 0 ? 0 - static_cast<uint64_t>(bytes) : static_cast<uint64_t>(bytes); }

// sum += bytes; false if that passes `limit`.
bool AddWithin(uint64_t& sum, uint64_t bytes, uint64_t limit) {
  return !__builtin_add_overflow(sum, bytes, &sum) && sum < limit;
}

}  // namespace

bool Simulator::MaySaturate() const {
  // A bound on every byte count of a run, from magnitudes (so that no
  // partial sum can pass it either way): memory in use on a device is at
  // most every op's persistent and start bytes plus a copy of every tensor
  // on every device; the bytes a device sends or receives, every tensor to
  // every device over the longest route.
  int32_t longest_route = 1;
  for (int32_t from = 0; from < num_devices_; ++from) {
    for (int32_t to = 0; to < num_devices_; ++to) {
      longest_route = std::max(longest_route, static_cast<int32_t>(cluster_->Route(from, to).size()));
    }
  }
  const uint64_t limit = kSaturatedBytes / 4;
  uint64_t op_bytes = 0;
  for (size_t i = 0; i < op_persistent_bytes_.size(); ++i) {
    if (!AddWithin(op_bytes, MagnitudeOf(op_persistent_bytes_[i]), limit)) return true;
    if (!AddWithin(op_bytes, MagnitudeOf(op_temporary_bytes_[i]), limit)) return true;
  }
  uint64_t tensor_bytes = 0;
  for (int32_t t = 0; t < num_tensors_; ++t) {
    if (!AddWithin(tensor_bytes, MagnitudeOf(tensor_[t].bytes), limit)) return true;
    if (!AddWithin(tensor_bytes, MagnitudeOf(tensor_[t].local_bytes), limit)) return true;
  }
  uint64_t copies_bytes = 0;
  const uint64_t copies = static_cast<uint64_t>(num_devices_ + 1) * static_cast<uint64_t>(longest_route);
  if (__builtin_mul_overflow(tensor_bytes, copies, &copies_bytes)) return true;
  return !AddWithin(copies_bytes, op_bytes, limit);
}

// Everything a run changes between two rounds of events, as it stands
// before one: the start of an instant, or, where ops that take no time end
// within it, of one of that instant's later rounds. Memory is kept without the
// persistent bytes (which depend on the whole placement), so a snapshot of
// one placement serves another that agrees with it up to that instant.
struct Simulator::Snapshot {
  double time_us = 0;
  uint64_t sequence = 0;
  int64_t events_done = 0;
  std::vector<int32_t> pending;
  std::vector<int32_t> refcount;
  InlineList<Transfer> transfers;
  std::vector<Fifo> ready;
  std::vector<int32_t> running;
  std::vector<double> idle_since_us;
  std::vector<int32_t> waking;
  std::vector<double> awake_at_us;
  std::vector<int64_t> dynamic_memory_bytes;  // in use, less the persistent bytes
  std::vector<Fifo> channel_queue;
  std::vector<char> channel_busy;
  EventQueue heap;
  // Sums so far; peak_memory_bytes holds the peak less the persistent bytes.
  std::vector<DeviceStats> devices;
};

struct Simulator::Memory {
  bool valid = false;  // a placement is remembered
  Placement placement;
  // Per slot: how many events the run had handled when the op's end was
  // handled (its end event's index). By event, not by time: ops that take
  // no time end and start many times within one instant, and a snapshot
  // taken at that instant may come after an op's end (docs/simulator.md).
  std::vector<int64_t> finish_event;
  std::vector<Snapshot> snapshots;  // by time
  int64_t total_events = 0;

  // The last RunChanged, until KeepChanged.
  bool changed_valid = false;
  Placement changed_placement;
  std::vector<int64_t> changed_finish_event;
  std::vector<Snapshot> changed_snapshots;  // taken after the one it resumed from
  size_t resumed_from = 0;                  // snapshot index, or kNone
  int64_t changed_total_events = 0;

  static constexpr size_t kNone = static_cast<size_t>(-1);
};

Simulator::~Simulator() = default;
Simulator::Simulator(Simulator&&) noexcept = default;

void Simulator::set_copies_use_host_cores(bool on) {
  copies_use_host_cores_ = on && std::find(shares_host_.begin(), shares_host_.end(), 1) != shares_host_.end();
  if (memory_) memory_->valid = false;  // a remembered run was of the other model
}

double Simulator::PlainPassUs(const Placement& placement) const {
  const int32_t n = graph_->num_ops();
  std::vector<double> finish_us(n, 0);
  std::vector<double> control_ready_us(n, 0);
  double end_us = 0;
  for (int32_t i = 0; i < n; ++i) {  // slots are in topological order
    double start_us = control_ready_us[i];
    for (int32_t slot = input_begin_[i]; slot < input_begin_[i + 1]; ++slot) {
      start_us = std::max(start_us, finish_us[inputs_[slot].producer]);
    }
    finish_us[i] = start_us + op_time_us_[i * num_devices_ + placement[order_[i]]];
    for (int32_t slot = control_begin_[i]; slot < control_begin_[i + 1]; ++slot) {
      control_ready_us[control_successors_[slot]] = std::max(control_ready_us[control_successors_[slot]], finish_us[i]);
    }
    end_us = std::max(end_us, finish_us[i]);
  }
  return end_us;
}

// One run of the step: the event loop and what each event does
// (docs/simulator.md lists the rules). Started fresh, or resumed from a
// snapshot with the persistent memory of the new placement.
//
// kPlain: no recorded events, no noise, no byte count that can saturate
// (Simulator::may_saturate_ is false), no copies done by host cores, no
// wake-ups and no host contention (the presets' clusters). That is the run a search evaluates thousands of
// times; its hot paths then skip those checks, and give the same answer as
// the general ones, which never saturate then.
template <bool kPlain>
class Simulator::Step {
 public:
  Step(Simulator& sim, SimResult& result, const SimOptions& options)
      : sim_(sim),
        s_(*sim.scratch_),
        cluster_(*sim.cluster_),
        result_(result),
        options_(options),
        D_(sim.num_devices_),
        random_(options.seed),
        jitter_(options.noise.jitter),
        record_events_(options.record_events),
        tensor_(sim.tensor_.data()),
        consumers_(sim.consumers_.data()),
        tensor_begin_(sim.tensor_begin_.data()),
        input_begin_(sim.input_begin_.data()),
        inputs_(sim.inputs_.data()),
        control_begin_(sim.control_begin_.data()),
        control_successors_(sim.control_successors_.data()),
        op_start_bytes_(sim.op_start_bytes_.data()),
        op_temporary_bytes_(sim.op_temporary_bytes_.data()),
        op_phase_(sim.op_phase_.data()),
        parallel_ops_(sim.parallel_ops_.data()) {}

  // Persistent memory and ops per device, as Prepare counted them for the
  // placement in the scratch, into the result and persistent_bytes_.
  // Idempotent: a Resume that refused its snapshot has set them once
  // already, and the full run that follows sets them again.
  void CountPersistent() {
    persistent_bytes_.assign(s_.persistent_bytes.begin(), s_.persistent_bytes.end());
    for (int32_t d = 0; d < D_; ++d) {
      result_.devices[d].persistent_bytes = s_.persistent_bytes[d];
      result_.devices[d].num_ops = s_.num_ops[d];
    }
  }

  // A fresh run: false if it ended before the first event (failure noise,
  // or parameters alone out of memory with stop_at_oom).
  bool Start() {
    const bool noisy = options_.noise.enabled();
    if (noisy && options_.noise.failure_probability > 0 && random_.Uniform() < options_.noise.failure_probability) {
      result_.failed = true;
      result_.reason = "sporadic failure (noise model)";
    }
    s_.pending.assign(sim_.pending_inputs_.begin(), sim_.pending_inputs_.end());
    s_.refcount.resize(sim_.num_tensors_);
    s_.copy_of.resize(static_cast<size_t>(sim_.num_tensors_) * D_);  // entries are written before they are read
    s_.transfers.clear();
    s_.ready.resize(D_);
    for (Fifo& f : s_.ready) f.Clear();
    s_.running.assign(D_, 0);
    s_.idle_since_us.assign(D_, 0);  // idle from the step's start
    s_.waking.assign(D_, 0);
    s_.awake_at_us.assign(D_, 0);
    s_.memory.resize(D_);
    for (int32_t d = 0; d < D_; ++d) s_.memory[d] = {0, 0, cluster_.devices[d].usable_memory_bytes()};
    s_.channel_queue.resize(cluster_.num_channels());
    for (Fifo& f : s_.channel_queue) f.Clear();
    s_.channel_busy.assign(cluster_.num_channels(), 0);
    s_.count_on_device.assign(D_, 0);
    s_.heap.clear();
    s_.newly_ready.clear();
    s_.arriving.clear();
    s_.freed_channels.clear();
    s_.to_cores.clear();
    s_.woken.clear();
    BindScratch();

    CountPersistent();
    for (int32_t d = 0; d < D_; ++d) {
      if (persistent_bytes_[d] > 0) Allocate(d, persistent_bytes_[d]);
    }
    if (result_.oom) {
      result_.reason = "out of memory: parameters alone exceed a device's capacity";
      if (stop_) {
        FlushPeaks();
        return false;
      }
    }
    s_.newly_ready.assign(sim_.source_slots_.data(), sim_.source_slots_.data() + sim_.source_slots_.size());
    StartWhatIsReady();
    return true;
  }

  // Resumes from `snapshot` with the placement in the scratch. False (and
  // nothing changed) where byte counts saturate, so that sums are not
  // exact; the caller runs in full.
  bool Resume(const Snapshot& snapshot) {
    CountPersistent();
    for (int32_t d = 0; d < D_; ++d) {
      const int64_t persistent = persistent_bytes_[d];
      const int64_t dynamic = snapshot.dynamic_memory_bytes[d];
      const int64_t peak = snapshot.devices[d].peak_memory_bytes;
      if (persistent >= kSaturatedBytes / 4 || dynamic >= kSaturatedBytes / 4 || peak >= kSaturatedBytes / 4) return false;
    }
    for (int32_t d = 0; d < D_; ++d) {
      if (persistent_bytes_[d] > cluster_.devices[d].usable_memory_bytes()) {
        result_.reason = "out of memory: parameters alone exceed a device's capacity";  // as Start says it
      }
      DeviceStats stats = snapshot.devices[d];
      stats.persistent_bytes = result_.devices[d].persistent_bytes;
      stats.num_ops = result_.devices[d].num_ops;
      // A peak counts persistent bytes from the start: the persistent
      // bytes, then the highest the rest reached.
      stats.peak_memory_bytes = persistent_bytes_[d] + snapshot.devices[d].peak_memory_bytes;
      stats.oom = stats.peak_memory_bytes > cluster_.devices[d].usable_memory_bytes();
      result_.oom = result_.oom || stats.oom;
      result_.devices[d] = stats;
    }
    s_.pending = snapshot.pending;
    s_.refcount = snapshot.refcount;
    s_.transfers = snapshot.transfers;
    s_.copy_of.resize(static_cast<size_t>(sim_.num_tensors_) * D_);
    for (size_t id = 0; id < s_.transfers.size(); ++id) {
      const Transfer& tr = s_.transfers[id];
      s_.copy_of[static_cast<size_t>(tr.tensor) * D_ + tr.dst_device] = static_cast<int32_t>(id);
    }
    s_.ready = snapshot.ready;
    s_.running = snapshot.running;
    s_.idle_since_us = snapshot.idle_since_us;
    s_.waking = snapshot.waking;
    s_.awake_at_us = snapshot.awake_at_us;
    s_.memory.resize(D_);
    for (int32_t d = 0; d < D_; ++d) {
      s_.memory[d] = {persistent_bytes_[d] + snapshot.dynamic_memory_bytes[d], result_.devices[d].peak_memory_bytes,
                      cluster_.devices[d].usable_memory_bytes()};
    }
    s_.channel_queue = snapshot.channel_queue;
    s_.channel_busy = snapshot.channel_busy;
    s_.count_on_device.assign(D_, 0);
    s_.heap = snapshot.heap;
    s_.newly_ready.clear();
    s_.arriving.clear();
    s_.freed_channels.clear();
    s_.to_cores.clear();
    s_.woken.clear();
    sequence_ = snapshot.sequence;
    events_done_ = snapshot.events_done;
    BindScratch();
    return true;
  }

  // Runs the events to the end of the step (or the first overflow with
  // stop_at_oom). With `snapshots`, saves the state before a round of
  // events about every `snapshot_every_events` events; with `finish_event`,
  // the index of each slot's end event.
  void Loop(std::vector<Snapshot>* snapshots, int64_t snapshot_every_events, std::vector<int64_t>* finish_event) {
    // A search's runs keep no timeline: their loop tests for none.
    if (snapshots == nullptr && finish_event == nullptr) {
      RunEvents<false>(nullptr, 0, nullptr);
    } else {
      RunEvents<true>(snapshots, snapshot_every_events, finish_event);
    }
    result_.step_time_us = now_us_;
    FlushPeaks();
    if (result_.oom && result_.reason.empty()) {
      for (int32_t d = 0; d < D_; ++d) {
        if (result_.devices[d].oom) {
          result_.reason = "out of memory on " + ForMessage(cluster_.devices[d].name);
          break;
        }
      }
    }
  }

  int64_t events_done() const { return events_done_; }

 private:
  template <bool kTimeline>
  void RunEvents(std::vector<Snapshot>* snapshots, int64_t snapshot_every_events, std::vector<int64_t>* finish_event) {
    int64_t last_snapshot_events = events_done_;
    while (!s_.heap.empty() && !stop_) {
      now_us_ = s_.heap.top().time_us();
      if (kTimeline && snapshots && events_done_ - last_snapshot_events >= snapshot_every_events) {
        Save(snapshots->emplace_back());
        last_snapshot_events = events_done_;
      }
      do {
        const Event event = s_.heap.Pop();
        if (kTimeline && finish_event && event.kind() == EventKind::kOpDone) (*finish_event)[event.id()] = events_done_;
        ++events_done_;
        if (event.kind() == EventKind::kOpDone) {
          FinishOp(event.id());
        } else if (kPlain || event.kind() == EventKind::kHopDone) {
          FinishHop(event.id());
        } else {
          Woke(event.kind(), event.id());
        }
      } while (!s_.heap.empty() && s_.heap.top().time_us() == now_us_);
      StartWhatIsReady();
    }
  }

  void Save(Snapshot& snapshot) const {
    snapshot.time_us = now_us_;
    snapshot.sequence = sequence_;
    snapshot.events_done = events_done_;
    snapshot.pending = s_.pending;
    snapshot.refcount = s_.refcount;
    snapshot.transfers = s_.transfers;
    snapshot.ready = s_.ready;
    snapshot.running = s_.running;
    snapshot.idle_since_us = s_.idle_since_us;
    snapshot.waking = s_.waking;
    snapshot.awake_at_us = s_.awake_at_us;
    snapshot.dynamic_memory_bytes.resize(D_);
    snapshot.devices = result_.devices;
    for (int32_t d = 0; d < D_; ++d) {
      // Saturated counts stay saturated; Resume refuses them.
      snapshot.dynamic_memory_bytes[d] =
          s_.memory[d].in_use_bytes == kSaturatedBytes ? kSaturatedBytes : s_.memory[d].in_use_bytes - persistent_bytes_[d];
      const int64_t peak = s_.memory[d].peak_bytes;
      snapshot.devices[d].peak_memory_bytes = peak == kSaturatedBytes ? kSaturatedBytes : std::max<int64_t>(peak - persistent_bytes_[d], 0);
    }
    snapshot.channel_queue = s_.channel_queue;
    snapshot.channel_busy = s_.channel_busy;
    snapshot.heap = s_.heap;
  }

  // The run's arrays, once sized: read through plain pointers, each access
  // is one load instead of two (the vector, then its element).
  void BindScratch() {
    device_ = s_.device.data();
    time_us_ = s_.time_us.data();
    pending_ = s_.pending.data();
    refcount_ = s_.refcount.data();
    copy_of_ = s_.copy_of.data();
    running_ = s_.running.data();
    memory_ = s_.memory.data();
    devices_ = result_.devices.data();
  }

  double Perturb(double time_us) {
    if constexpr (kPlain) return time_us;
    if (jitter_ <= 0) return time_us;
    return time_us * std::exp(jitter_ * random_.Normal() - 0.5 * jitter_ * jitter_);
  }

  void Schedule(double time_us, EventKind kind, int32_t id) {
    s_.heap.Push(Event::Make(time_us, sequence_++, kind, id));
  }

  // Memory in use never wraps: a device whose count would pass int64's
  // limit stays at the limit (far over any capacity) for the rest of the
  // step, frees included.
  // Inlined: called a few times per event.
  [[gnu::always_inline]] void Allocate(int32_t d, int64_t bytes) {
    Scratch::DeviceMemory& memory = memory_[d];
    int64_t& in_use = memory.in_use_bytes;
    if constexpr (kPlain) {
      in_use += bytes;  // cannot pass int64's limit (may_saturate_)
    } else {
      if (in_use == kSaturatedBytes) return;
      in_use = SaturatingAddBytes(in_use, bytes);
    }
    if (in_use > memory.peak_bytes) {
      memory.peak_bytes = in_use;
      if (in_use > memory.usable_bytes && !devices_[d].oom) OutOfMemory(d);
    }
    if (!kPlain && record_events_) result_.memory_events.push_back({d, now_us_, in_use});
  }

  // A free never makes a new peak: memory in use never exceeds the peak.
  [[gnu::always_inline]] void Free(int32_t d, int64_t bytes) {
    int64_t& in_use = memory_[d].in_use_bytes;
    if constexpr (kPlain) {
      in_use -= bytes;
    } else {
      if (in_use == kSaturatedBytes) return;
      in_use = SaturatingAddBytes(in_use, -bytes);
    }
    if (!kPlain && record_events_) result_.memory_events.push_back({d, now_us_, in_use});
  }

  [[gnu::noinline]] void OutOfMemory(int32_t d) {
    devices_[d].oom = true;
    result_.oom = true;
    if (options_.stop_at_oom) stop_ = true;
  }

  // The peaks, kept in the scratch during the run, into the result.
  void FlushPeaks() {
    for (int32_t d = 0; d < D_; ++d) result_.devices[d].peak_memory_bytes = s_.memory[d].peak_bytes;
  }

  static int64_t AddBytes(int64_t a, int64_t b) {
    if constexpr (kPlain) return a + b;  // cannot pass int64's limit (may_saturate_)
    return SaturatingAddBytes(a, b);
  }

  // A ready queue holds ops (slots) and, on a host device, copies waiting
  // for its core (~transfer id, negative). Work that must wait for the
  // device's wake-up takes its slot now and starts when the wake-up ends
  // (Woke): only then does it allocate, draw its noise and compute.
  void StartReadyOps(int32_t d) {
    const int32_t slots = parallel_ops_[d];
    Fifo& ready = s_.ready[d];
    while (running_[d] < slots && !ready.empty()) {
      int32_t op = ready.Pop();
      if constexpr (!kPlain) {
        const double wake_up_us = WakeUpUs(d);
        if (wake_up_us > 0) {
          if (s_.waking[d]++ == 0) s_.awake_at_us[d] = now_us_ + wake_up_us;
          ++running_[d];
          Schedule(s_.awake_at_us[d], op < 0 ? EventKind::kHopWoken : EventKind::kOpWoken, op < 0 ? ~op : op);
          continue;
        }
      }
      ++running_[d];
      if (!kPlain && op < 0) {
        RunHop(~op);
        continue;
      }
      StartOp(d, op);
    }
  }

  [[gnu::always_inline]] void StartOp(int32_t d, int32_t op) {
    if (op_start_bytes_[op] > 0) Allocate(d, op_start_bytes_[op]);
    double duration_us = Perturb(time_us_[op]);
    if (!kPlain && sim_.contention_per_busy_device_ > 0 && sim_.shares_host_[d]) duration_us *= ContentionFactor(d);
    devices_[d].compute_us[op_phase_[op]] += duration_us;
    if (!kPlain && record_events_) result_.op_events.push_back({sim_.order_[op], d, now_us_, now_us_ + duration_us});
    Schedule(now_us_ + duration_us, EventKind::kOpDone, op);
  }

  // How long device d waits before it starts what it takes now: the rest
  // of its wake-up if it is waking (all it takes meanwhile waits for the
  // same wake-up), else its wake-up if it ran nothing for a time above 0
  // and at least its idle time before one (Device::wake_up_us), else 0. A
  // device with work running is awake; at the step's start a device has
  // been idle for no time, so nothing starts late there.
  double WakeUpUs(int32_t d) const {
    if (!sim_.wakes_) return 0;
    if (s_.waking[d] > 0) return s_.awake_at_us[d] - now_us_;
    if (running_[d] > 0) return 0;
    const Device& device = cluster_.devices[d];
    const double idle_us = now_us_ - s_.idle_since_us[d];
    return idle_us > 0 && idle_us >= device.wake_up_after_idle_us ? device.wake_up_us : 0;
  }

  // The wake-up that held an op or copy ended: it starts in its device's
  // turn of this instant, after the instant's events (StartWhatIsReady).
  void Woke(EventKind kind, int32_t id) {
    const int32_t item = kind == EventKind::kOpWoken ? id : ~id;
    const int32_t d = item >= 0 ? device_[item] : CopyEngine(s_.transfers[id].route[s_.transfers[id].next_hop]);
    s_.woken.push_back({d, item});
    dirty_devices_ |= uint64_t{1} << d;
  }

  // An op starting on host device d runs longer for each other host device
  // busy at that instant (running an op or a copy; one still waking for
  // its work is not); fixed at its start (the simulator has no rates that
  // change mid-op). Devices are started in index order within an instant,
  // so of two ops starting together the second sees the first.
  double ContentionFactor(int32_t d) const {
    int32_t busy = 0;
    for (int32_t e = 0; e < D_; ++e) busy += e != d && sim_.shares_host_[e] && running_[e] > s_.waking[e];
    return 1 + sim_.contention_per_busy_device_ * busy;
  }

  void ReleaseTensor(int32_t tensor, int32_t d) {
    if (--refcount_[tensor] == 0 && tensor_[tensor].local_bytes > 0) Free(d, tensor_[tensor].local_bytes);
  }

  // The host device whose core does a hop's copy, or -1 (a DMA engine or
  // a preset's link): Cluster::CopyEngine.
  int32_t CopyEngine(const Hop& hop) const {
    if (kPlain || !sim_.copies_use_host_cores_) return -1;
    return sim_.copy_engine_[hop.from * D_ + hop.to];
  }

  // Takes the channel's next transfer. Its hop runs now, or, where a host
  // core does the copy, waits its turn in that device's ready queue behind
  // the ops already there (the channel stays taken meanwhile: the executor
  // copies one tensor at a time per pair of devices); the copies of one
  // instant join there in the sends' order, once every channel has taken
  // its transfer (StartWhatIsReady).
  void StartHop(int32_t channel) {
    if (s_.channel_busy[channel] || s_.channel_queue[channel].empty()) return;
    int32_t id = s_.channel_queue[channel].Pop();
    s_.channel_busy[channel] = 1;
    const Transfer& tr = s_.transfers[id];
    if (CopyEngine(tr.route[tr.next_hop]) >= 0) {
      s_.to_cores.push_back(id);
      return;
    }
    RunHop(id);
  }

  // The hop's copy, from now: its channel (and core, if any) already taken.
  void RunHop(int32_t id) {
    const double start_us = now_us_;
    Transfer& tr = s_.transfers[id];
    const Hop& hop = tr.route[tr.next_hop];
    const int32_t channel = hop.channel;
    const int64_t bytes = tensor_[tr.tensor].bytes;
    // The destination's buffer is allocated when the last hop starts.
    if (tr.next_hop + 1 == static_cast<int32_t>(tr.route.size()) && bytes > 0) Allocate(tr.dst_device, bytes);
    double duration_us = Perturb(cluster_.HopTimeUs(hop, bytes));
    DeviceStats& from = devices_[hop.from];
    DeviceStats& to = devices_[hop.to];
    from.copy_out_us += duration_us;
    from.bytes_out = AddBytes(from.bytes_out, bytes);
    to.copy_in_us += duration_us;
    to.bytes_in = AddBytes(to.bytes_in, bytes);
    if (!kPlain && record_events_) {
      result_.transfer_events.push_back({sim_.order_[tr.src_op], tr.tensor - tensor_begin_[tr.src_op], hop.from, hop.to,
                                         channel, start_us, start_us + duration_us, bytes});
    }
    Schedule(start_us + duration_us, EventKind::kHopDone, id);
  }

  [[gnu::always_inline]] void FinishOp(int32_t op) {
    const int32_t d = device_[op];
    if (--running_[d] == 0 && !kPlain) s_.idle_since_us[d] = now_us_;
    dirty_devices_ |= uint64_t{1} << d;
    if (op_temporary_bytes_[op] > 0) Free(d, op_temporary_bytes_[op]);

    // Outputs: wake local consumers, send once to each remote device.
    for (int32_t t = tensor_begin_[op]; t < tensor_begin_[op + 1]; ++t) {
      int32_t local = 0;
      int32_t num_remote = 0;
      uint64_t remote_devices = 0;
      for (int32_t slot = tensor_[t].consumer_begin; slot < tensor_[t + 1].consumer_begin; ++slot) {
        int32_t consumer = consumers_[slot];
        int32_t cd = device_[consumer];
        if (cd == d) {
          ++local;
          if (--pending_[consumer] == 0) s_.newly_ready.push_back(consumer);
        } else {
          const uint64_t bit = uint64_t{1} << cd;
          num_remote += (remote_devices & bit) == 0;
          remote_devices |= bit;
          ++s_.count_on_device[cd];
        }
      }
      refcount_[t] = local + num_remote;
      // Remote devices in ascending order, one bit each (no branch per device).
      for (; remote_devices != 0; remote_devices &= remote_devices - 1) {
        const int32_t rd = std::countr_zero(remote_devices);
        int32_t id = static_cast<int32_t>(s_.transfers.size());
        s_.transfers.push_back({t, op, rd, 0, s_.count_on_device[rd], sim_.route_[d * D_ + rd]});
        s_.count_on_device[rd] = 0;
        copy_of_[static_cast<size_t>(t) * D_ + rd] = id;
        s_.arriving.push_back(id);
      }
      if (refcount_[t] == 0 && tensor_[t].local_bytes > 0) Free(d, tensor_[t].local_bytes);  // nobody reads it
    }

    // Inputs this op was the last local reader of are freed.
    for (int32_t slot = input_begin_[op]; slot < input_begin_[op + 1]; ++slot) {
      const int32_t t = inputs_[slot].tensor;
      if (device_[inputs_[slot].producer] == d) {
        ReleaseTensor(t, d);
      } else {
        Transfer& tr = s_.transfers[copy_of_[static_cast<size_t>(t) * D_ + d]];
        if (--tr.consumers_remaining == 0 && tensor_[t].bytes > 0) Free(d, tensor_[t].bytes);
      }
    }
    for (int32_t slot = control_begin_[op]; slot < control_begin_[op + 1]; ++slot) {
      const int32_t next = control_successors_[slot];
      if (--pending_[next] == 0) s_.newly_ready.push_back(next);
    }
  }

  void FinishHop(int32_t id) {
    Transfer& tr = s_.transfers[id];
    int32_t channel = tr.route[tr.next_hop].channel;
    s_.channel_busy[channel] = 0;
    const int32_t engine = CopyEngine(tr.route[tr.next_hop]);
    if (engine >= 0) {
      if (--running_[engine] == 0) s_.idle_since_us[engine] = now_us_;
      dirty_devices_ |= uint64_t{1} << engine;
    }
    s_.freed_channels.push_back(channel);
    ++tr.next_hop;
    if (tr.next_hop < static_cast<int32_t>(tr.route.size())) {
      s_.arriving.push_back(id);
    } else {
      // Arrived: the sender's copy may go, the receivers may run.
      const int32_t t = tr.tensor;
      ReleaseTensor(t, device_[tr.src_op]);
      for (int32_t slot = tensor_[t].consumer_begin; slot < tensor_[t + 1].consumer_begin; ++slot) {
        int32_t consumer = consumers_[slot];
        if (device_[consumer] == tr.dst_device && --pending_[consumer] == 0) s_.newly_ready.push_back(consumer);
      }
    }
  }

  // After an instant's events all ran (so every free of the instant came
  // first): queue what they released in the tie rules' order, then start
  // hops on idle channels and ops on idle devices.
  [[gnu::always_inline]] void StartWhatIsReady() {
    // Ops and copies whose wake-up ended now, by device (the order devices
    // start in below), each device's in the order they took its slots.
    if (!kPlain && s_.woken.size() > 1) {
      std::stable_sort(s_.woken.begin(), s_.woken.end(),
                       [](const Scratch::Woken& a, const Scratch::Woken& b) { return a.device < b.device; });
    }
    // By rank. Usually already in order (one op's consumers are), and
    // checking is much cheaper than sorting.
    if (!std::is_sorted(s_.newly_ready.begin(), s_.newly_ready.end())) std::sort(s_.newly_ready.begin(), s_.newly_ready.end());
    for (int32_t op : s_.newly_ready) {
      s_.ready[device_[op]].Push(op);
      dirty_devices_ |= uint64_t{1} << device_[op];
    }
    s_.newly_ready.clear();
    // A transfer is one tensor (producer's rank, output) to one device.
    auto before = [this](int32_t a, int32_t b) {
      const Transfer& x = s_.transfers[a];
      const Transfer& y = s_.transfers[b];
      return x.tensor != y.tensor ? x.tensor < y.tensor : x.dst_device < y.dst_device;
    };
    if (s_.arriving.size() > 1 && !std::is_sorted(s_.arriving.begin(), s_.arriving.end(), before)) {
      std::sort(s_.arriving.begin(), s_.arriving.end(), before);
    }
    for (int32_t id : s_.arriving) {
      const Transfer& tr = s_.transfers[id];
      const int32_t channel = tr.route[tr.next_hop].channel;
      s_.channel_queue[channel].Push(id);
      s_.freed_channels.push_back(channel);
    }
    s_.arriving.clear();
    // Channels in the order they went idle or got work, which the rules
    // above fix; a repeat finds the channel busy.
    for (int32_t channel : s_.freed_channels) StartHop(channel);
    s_.freed_channels.clear();
    if constexpr (!kPlain) {
      // Copies for host cores, in the sends' order whichever channel they
      // came from, behind the ops released at this instant.
      if (s_.to_cores.size() > 1 && !std::is_sorted(s_.to_cores.begin(), s_.to_cores.end(), before)) {
        std::sort(s_.to_cores.begin(), s_.to_cores.end(), before);
      }
      for (int32_t id : s_.to_cores) {
        const Transfer& tr = s_.transfers[id];
        const int32_t engine = CopyEngine(tr.route[tr.next_hop]);
        s_.ready[engine].Push(~id);
        dirty_devices_ |= uint64_t{1} << engine;
      }
      s_.to_cores.clear();
    }
    const Scratch::Woken* woken = s_.woken.begin();
    while (dirty_devices_ != 0) {
      int32_t d = std::countr_zero(dirty_devices_);
      dirty_devices_ &= dirty_devices_ - 1;
      if constexpr (!kPlain) {
        // What its wake-up held starts first: it took its slot earlier.
        for (; woken != s_.woken.end() && woken->device == d; ++woken) {
          --s_.waking[d];
          if (woken->item < 0) {
            RunHop(~woken->item);
          } else {
            StartOp(d, woken->item);
          }
        }
      }
      StartReadyOps(d);
    }
    if constexpr (!kPlain) s_.woken.clear();
  }

  Simulator& sim_;
  Scratch& s_;
  const Cluster& cluster_;
  SimResult& result_;
  const SimOptions& options_;
  const int32_t D_;
  Random random_;
  const double jitter_;
  std::vector<int64_t> persistent_bytes_;  // per device, this run's placement
  uint64_t sequence_ = 0;
  int64_t events_done_ = 0;
  double now_us_ = 0;
  bool stop_ = false;
  // Devices that may be able to start an op once the current instant's
  // events are handled.
  uint64_t dirty_devices_ = 0;
  const bool record_events_;

  // The simulator's flattened graph facts (see simulator.h).
  const TensorFacts* const tensor_;
  const int32_t* const consumers_;
  const int32_t* const tensor_begin_;
  const int32_t* const input_begin_;
  const InputEdge* const inputs_;
  const int32_t* const control_begin_;
  const int32_t* const control_successors_;
  const int64_t* const op_start_bytes_;
  const int64_t* const op_temporary_bytes_;
  const uint8_t* const op_phase_;
  const int32_t* const parallel_ops_;
  // The scratch's and the result's arrays (BindScratch).
  int32_t* device_ = nullptr;
  double* time_us_ = nullptr;
  int32_t* pending_ = nullptr;
  int32_t* refcount_ = nullptr;
  int32_t* copy_of_ = nullptr;
  int32_t* running_ = nullptr;
  Scratch::DeviceMemory* memory_ = nullptr;
  DeviceStats* devices_ = nullptr;
};

bool Simulator::Prepare(const Placement& placement, SimResult& result) {
  const Graph& graph = *graph_;
  const Cluster& cluster = *cluster_;
  const int32_t n = graph.num_ops();
  const int32_t D = num_devices_;
  result.devices.assign(D, DeviceStats{});
  if (static_cast<int32_t>(placement.size()) != n) {
    result.invalid = true;
    result.reason = "the placement has " + std::to_string(placement.size()) + " entries for " + std::to_string(n) + " ops";
    return false;
  }
  Scratch& s = *scratch_;
  s.device.resize(n);
  // Each op's time on its device, gathered here in one sweep: looked up in
  // the devices x ops table as ops start, it was a cache miss per op. The
  // same sweep counts each device's ops and persistent bytes.
  s.time_us.resize(n);
  s.persistent_bytes.assign(D, 0);
  s.num_ops.assign(D, 0);
  int32_t first_bad = n;  // the first slot on no device or on one that cannot run it
  for (int32_t i = 0; i < n; ++i) {
    const int32_t op = order_[i];
    const int32_t d = placement[op];
    s.device[i] = d;
    if (static_cast<uint32_t>(d) >= static_cast<uint32_t>(D)) {
      first_bad = i;
      break;
    }
    s.time_us[i] = op_time_us_[i * D + d];
    if (s.time_us[i] == kCannotRun) {
      first_bad = i;
      break;
    }
    s.persistent_bytes[d] = SaturatingAddBytes(s.persistent_bytes[d], op_persistent_bytes_[i]);
    ++s.num_ops[d];
  }
  // Co-location, only where an op has a leader other than itself; an op
  // before the first bad slot is reported first, as a sweep in slot order
  // would. The leader comes first by rank, so its device was checked.
  for (int32_t i : colocated_slots_) {
    if (i >= first_bad) break;
    const int32_t op = order_[i];
    const int32_t d = s.device[i];
    const int32_t leader_device = placement[colocation_leader_[op]];
    if (leader_device != d) {
      result.invalid = true;
      result.reason = "co-location group '" + ForMessage(graph.op(op).colocation_group) + "' is split across " +
                      ForMessage(cluster.devices[leader_device].name) + " and " + ForMessage(cluster.devices[d].name);
      return false;
    }
  }
  if (first_bad < n) {
    const int32_t op = order_[first_bad];
    const int32_t d = s.device[first_bad];
    result.invalid = true;
    if (static_cast<uint32_t>(d) >= static_cast<uint32_t>(D)) {
      result.reason = "op '" + ForMessage(graph.op(op).name) + "' is on no device of the cluster";
    } else {
      result.reason = "op '" + ForMessage(graph.op(op).name) + "' (" + ForMessage(graph.op(op).type) + ") cannot run on " +
                      ForMessage(cluster.devices[d].name);
    }
    return false;
  }
  return true;
}

template <typename Body>
void Simulator::WithStep(SimResult& result, const SimOptions& options, Body&& body) {
  if (!options.record_events && !options.noise.enabled() && !may_saturate_ && !copies_use_host_cores_ && !wakes_ &&
      contention_per_busy_device_ == 0) {
    Step<true> step(*this, result, options);
    body(step);
  } else {
    Step<false> step(*this, result, options);
    body(step);
  }
}

SimResult Simulator::Run(const Placement& placement, const SimOptions& options) {
  SimResult result;
  if (!Prepare(placement, result)) return result;
  WithStep(result, options, [](auto& step) {
    if (step.Start()) step.Loop(nullptr, 0, nullptr);
  });
  return result;
}

namespace {

// Snapshots a run keeps: each costs a copy of the run's state, and a
// resumed run skips on average half the time between two.
constexpr int64_t kSnapshotsPerRun = 12;

}  // namespace

SimResult Simulator::Remember(const Placement& placement) {
  Memory& m = *memory_;
  m.valid = false;
  m.changed_valid = false;
  SimResult result;
  if (!Prepare(placement, result)) return result;
  const SimOptions options;
  m.snapshots.clear();
  m.finish_event.assign(graph_->num_ops(), 0);
  const int64_t guess_events = std::max<int64_t>(graph_->num_ops(), 1);
  const int64_t every = std::max<int64_t>(m.total_events > 0 ? m.total_events : guess_events, kSnapshotsPerRun) / kSnapshotsPerRun;
  WithStep(result, options, [&](auto& step) {
    if (step.Start()) step.Loop(&m.snapshots, every, &m.finish_event);
    m.total_events = step.events_done();
  });
  m.placement = placement;
  m.valid = true;
  return result;
}

SimResult Simulator::RunChanged(const Placement& placement, std::span<const int32_t> changed_ops) {
  Memory& m = *memory_;
  m.changed_valid = false;
  last_skipped_fraction_ = 0;
  SimResult result;
  if (!Prepare(placement, result)) return result;

  // The first event at which a changed op matters: the end of one of its
  // producers (which looks up where the op runs). A snapshot saved after
  // that many events is too late, even one of the same instant.
  int64_t first_event = m.valid ? std::numeric_limits<int64_t>::max() : 0;
  for (int32_t op : changed_ops) {
    if (first_event == 0) break;
    if (op < 0 || op >= graph_->num_ops()) continue;
    const int32_t slot = slot_of_[op];
    if (producer_begin_[slot] == producer_begin_[slot + 1]) first_event = 0;
    for (int32_t k = producer_begin_[slot]; k < producer_begin_[slot + 1]; ++k) {
      first_event = std::min(first_event, m.finish_event[producers_[k]]);
    }
  }
  const SimOptions options;
  WithStep(result, options, [&](auto& step) {
    m.resumed_from = Memory::kNone;
    if (first_event > 0) {
      // Snapshots are in event order; the last one saved before the event.
      auto after = std::upper_bound(m.snapshots.begin(), m.snapshots.end(), first_event,
                                    [](int64_t e, const Snapshot& snap) { return e < snap.events_done; });
      if (after != m.snapshots.begin()) {
        const size_t index = static_cast<size_t>(after - m.snapshots.begin()) - 1;
        if (step.Resume(m.snapshots[index])) m.resumed_from = index;
      }
    }
    m.changed_snapshots.clear();
    const int64_t every = std::max<int64_t>(m.total_events, kSnapshotsPerRun) / kSnapshotsPerRun;
    if (m.resumed_from == Memory::kNone) {
      m.changed_finish_event.assign(graph_->num_ops(), 0);
      if (step.Start()) step.Loop(&m.changed_snapshots, every, &m.changed_finish_event);
    } else {
      m.changed_finish_event = m.finish_event;  // ops that ended before the snapshot end alike, at the same event
      last_skipped_fraction_ = m.total_events > 0 ? static_cast<double>(m.snapshots[m.resumed_from].events_done) / m.total_events : 0;
      step.Loop(&m.changed_snapshots, every, &m.changed_finish_event);
    }
    m.changed_total_events = step.events_done();
  });
  m.changed_placement = placement;
  m.changed_valid = true;
  return result;
}

void Simulator::KeepChanged() {
  Memory& m = *memory_;
  assert(m.changed_valid);
  if (!m.changed_valid) return;
  if (m.resumed_from == Memory::kNone) {
    m.snapshots.swap(m.changed_snapshots);
  } else {
    m.snapshots.resize(m.resumed_from + 1);
    for (Snapshot& snap : m.changed_snapshots) m.snapshots.push_back(std::move(snap));
  }
  m.changed_snapshots.clear();
  m.finish_event.swap(m.changed_finish_event);
  m.placement.swap(m.changed_placement);
  m.total_events = m.changed_total_events;
  m.valid = true;
  m.changed_valid = false;
}

}  // namespace devplace
