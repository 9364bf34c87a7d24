#include "exec/executor.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/cuda.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <latch>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "exec/host_allocator.h"
#include "exec/host_cpus.h"
#include "exec/kernels/kernel.h"
#include "exec/memory_ledger.h"
#include "exec/step_plan.h"
#include "util/error.h"
#include "util/format_bytes.h"

namespace devplace {

double ExecStep::stand_in_share() const {
  double stand_in_us = 0;
  for (const StandInUse& s : stand_ins) stand_in_us += s.busy_us;
  return busy_us > 0 ? stand_in_us / busy_us : 0;
}

void CheckClusterIsThisMachine(const Cluster& cluster, const std::string& source) {
  const std::vector<int32_t> usable = UsableCores();
  const std::set<int32_t> usable_set(usable.begin(), usable.end());
  for (const Device& d : cluster.devices) {
    const std::string what = ForMessage(source) + ": device '" + ForMessage(d.name) + "'";
    if (d.kind == DeviceKind::kCpu) {
      if (d.cores.empty()) {
        throw Error(what + " owns no cores; devplace run needs a cluster of this machine (devplace clusters --detect)");
      }
      for (int32_t core : d.cores) {
        if (!usable_set.count(core)) {
          throw Error(what + " owns core " + std::to_string(core) + ", which this process may not run on (it may use " +
                      std::to_string(usable.size()) + " cores)");
        }
      }
    } else {
      const int64_t visible = torch::cuda::is_available() ? static_cast<int64_t>(torch::cuda::device_count()) : 0;
      if (d.cuda_index < 0) {
        throw Error(what +
                    " is a GPU without a cuda_index; devplace run needs a cluster of this machine (devplace clusters "
                    "--detect)");
      }
      if (d.cuda_index >= visible) {
        throw Error(what + " is CUDA device " + std::to_string(d.cuda_index) + ", but torch sees " +
                    std::to_string(visible) + " CUDA device" + (visible == 1 ? "" : "s"));
      }
    }
  }
}

namespace {

using Clock = std::chrono::steady_clock;

at::Device TorchDevice(const Device& d) {
  return d.kind == DeviceKind::kGpu ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(d.cuda_index))
                                    : at::Device(at::kCPU);
}

// What every thread of a step does first. Torch's intra-op pool is global,
// so the device's parallelism comes from its own threads, one op each, and
// torch runs each kernel on the thread that calls it. Denormals are
// flushed per thread (the flag lives in the thread's FPU state): random
// values multiplied through a deep graph must not fall onto the slow path.
void SetUpThread(const std::vector<int32_t>& cores) {
  PinThisThread(cores);
  at::set_num_threads(1);
  at::globalContext().setFlushDenormal(true);
}

// A message's first line, cut to a readable length: torch appends a stack.
std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return ForMessage(line, 300);
}

// "[64, 1024] int32[2] -> [64, 512]": what a kernel declined.
std::string DescribeShapes(const KernelCall& call) {
  auto shape = [](at::IntArrayRef sizes, const std::string& dtype) {
    std::string text = dtype == "float32" ? "" : dtype;
    text += "[";
    for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
    return text + "]";
  };
  std::string text;
  for (const at::Tensor& t : call.inputs) {
    text += (text.empty() ? "" : " ") +
            shape(t.sizes(), t.scalar_type() == at::kFloat ? "float32" : c10::toString(t.scalar_type()));
  }
  text += " ->";
  for (const TensorSpec& spec : call.op.outputs) text += " " + shape(spec.shape, spec.dtype);
  return text;
}

}  // namespace

struct Executor::Impl {
  Impl(const Graph& g, const Cluster& c, ExecOptions o) : graph(g), cluster(c), options(std::move(o)) {}

  const Graph& graph;
  const Cluster& cluster;
  ExecOptions options;
  std::vector<int32_t> rank;
  std::vector<KernelFn> kernels;  // per op; nullptr: stand-in
  // Per op: how ONNX import's gradient ops lay out their inputs (kernel.h).
  std::vector<std::optional<ImportGradient>> import_gradients;
  // Per op, kept between steps: its state, the device it lives on, and
  // whether its kernel declined its shapes (then it runs the stand-in).
  std::vector<OpState> states;
  std::vector<int32_t> state_device;
  std::vector<int8_t> declined;
  std::vector<std::string> why;
  std::vector<int32_t> keep_index;  // op -> index into ExecOptions::keep_outputs_of, or -1
  int32_t saved_threads = 1;
  int64_t steps_run = 0;
};

namespace {

// One step under one placement: the threads, the queues and the books.
// Every field below `mu` is guarded by it; kernels and copies run unlocked.
class Step {
 public:
  Step(Executor::Impl& impl, const Placement& placement)
      : impl_(impl),
        graph_(impl.graph),
        cluster_(impl.cluster),
        placement_(placement),
        plan_(MakeStepPlan(impl.graph, impl.cluster, placement)),
        devices_(impl.cluster.num_devices()),
        ledger_(impl.cluster, impl.options.record_events) {}

  ExecStep Run();

 private:
  struct Channel {
    std::deque<int32_t> queue;  // tensors waiting, first come first served
    std::condition_variable cv;  // wakes its copy thread (engine < 0)
    // The host CPU device whose worker does this channel's copies, between
    // its ops (the simulator's host-core copy model), or -1 where a copy
    // thread of its own does them (GPU to GPU).
    int32_t engine = -1;
    bool busy = false;  // a copy of it waits in the engine's queue or runs
  };
  // A copy waiting in a device's ready queue (as ~index into copy_tasks_).
  struct CopyTask {
    int32_t tensor;
    int32_t from;
    int32_t to;
  };

  void Worker(int32_t device);
  void Copier(int32_t from, int32_t to);
  // The rest run with `mu_` held.
  // Copies `tensor` from `from` to `to` with the lock released around the
  // copy itself; false if the step stopped (out of memory, a failure).
  bool Copy(int32_t tensor, int32_t from, int32_t to, std::unique_lock<std::mutex>& lock);
  // Hands a channel served by a worker its next copy, if it is idle.
  void StartCopy(int32_t from, int32_t to);
  void Finish(int32_t op, int32_t device, double start_us, double end_us, std::vector<at::Tensor>& outputs,
              bool stand_in);
  void Arrived(int32_t tensor, int32_t from, int32_t to, double start_us, double end_us, at::Tensor value);
  void DropRead(int32_t tensor, int32_t device, double now_us);
  void MaybeFreeAtProducer(int32_t tensor, double now_us);
  void Enqueue(std::vector<int32_t>& released);
  void Abort(std::string reason, bool oom);
  void Keep(int32_t op, const std::vector<at::Tensor>& outputs);
  bool RunKernel(KernelCall& call, int32_t op);
  double NowUs() const { return std::chrono::duration<double, std::micro>(Clock::now() - t0_).count(); }
  at::Tensor& Value(int32_t tensor, int32_t device) { return values_[static_cast<size_t>(tensor) * devices_ + device]; }

  Executor::Impl& impl_;
  const Graph& graph_;
  const Cluster& cluster_;
  const Placement& placement_;
  const StepPlan plan_;
  const int32_t devices_;
  Clock::time_point t0_;

  std::mutex mu_;
  std::vector<std::deque<int32_t>> ready_;  // ops, and copies as ~index into copy_tasks_
  std::vector<CopyTask> copy_tasks_;
  std::vector<std::unique_ptr<std::condition_variable>> device_cv_;
  std::map<std::pair<int32_t, int32_t>, Channel> channels_;
  std::vector<at::Tensor> values_;   // [tensor * devices + device]
  std::vector<int32_t> reads_left_;  // [tensor * devices + device]
  std::vector<int32_t> sends_left_;  // tensor -> copies not yet arrived
  std::vector<int32_t> pending_;     // op -> inputs not yet arrived
  int32_t ops_done_ = 0;
  bool stop_ = false;
  MemoryLedger ledger_;
  SimResult result_;
  ExecStep step_;
  double last_end_us_ = 0;
};

bool Step::RunKernel(KernelCall& call, int32_t op) {
  const KernelFn kernel = impl_.kernels[op];
  if (kernel != nullptr && !impl_.declined[op]) {
    std::string why;
    try {
      if (kernel(call)) {
        bool fits = true;
        for (size_t i = 0; i < call.outputs.size() && fits; ++i) {
          const at::Tensor& out = call.outputs[i];
          const TensorSpec& spec = call.op.outputs[i];
          fits = out.defined() && out.numel() == ElementsOf(spec) && out.scalar_type() == ScalarTypeOf(spec.dtype) &&
                 out.device() == call.device;
        }
        if (fits) return false;
        why = "its result has another size or dtype than the graph's";
      } else {
        why = "shapes it does not take: " + DescribeShapes(call);
      }
    } catch (const std::exception& e) {
      why = "kernel error: " + FirstLine(e.what());
    }
    // The op is the same every step: decide once.
    impl_.declined[op] = 1;
    impl_.why[op] = why;
    call.outputs.assign(call.outputs.size(), at::Tensor());
  }
  RunStandIn(call);
  return true;
}

void Step::Worker(int32_t device) {
  const Device& d = cluster_.devices[device];
  const at::Device torch_device = TorchDevice(d);
  std::unique_lock lock(mu_);
  while (true) {
    device_cv_[device]->wait(lock, [&] { return stop_ || !ready_[device].empty(); });
    if (stop_) return;
    if (impl_.options.step_time_limit_s > 0 && NowUs() > 1e6 * impl_.options.step_time_limit_s) {
      char limit[64];
      std::snprintf(limit, sizeof limit, "%g s", impl_.options.step_time_limit_s);
      Abort(std::string("time limit: the step ran past ") + limit, /*oom=*/false);
      return;
    }
    const int32_t op = ready_[device].front();
    ready_[device].pop_front();
    if (op < 0) {
      const CopyTask task = copy_tasks_[~op];
      if (!Copy(task.tensor, task.from, task.to, lock)) return;
      channels_.at({task.from, task.to}).busy = false;
      StartCopy(task.from, task.to);
      continue;
    }
    const Op& o = graph_.op(op);
    if (!ledger_.Allocate(device, plan_.start_bytes[op], NowUs())) {
      Abort("out of memory on " + ForMessage(d.name) + ": op '" + ForMessage(o.name) + "' needs " +
                FormatBytes(plan_.start_bytes[op]) + " more with " + FormatBytes(ledger_.in_use(device)) +
                " in use of " + FormatBytes(d.usable_memory_bytes()) + " usable",
            /*oom=*/true);
      return;
    }
    std::vector<at::Tensor> inputs;
    for (int32_t e : graph_.in_data_edges(op)) {
      const DataEdge& edge = graph_.data_edges()[e];
      inputs.push_back(Value(plan_.tensor(edge.src, edge.src_output), device));
    }
    if (impl_.state_device[op] != device) {
      impl_.states[op].tensors.clear();
      impl_.state_device[op] = device;
    }
    lock.unlock();

    KernelCall call(o, std::move(inputs), torch_device, impl_.states[op], impl_.options.seed);
    if (impl_.import_gradients[op]) call.import_gradient = &*impl_.import_gradients[op];
    std::string failure;
    bool stand_in = false;
    const double start_us = NowUs();
    try {
      stand_in = RunKernel(call, op);
      if (torch_device.is_cuda()) torch::cuda::synchronize(torch_device.index());
    } catch (const std::exception& e) {
      failure = FirstLine(e.what());
    }
    const double end_us = NowUs();
    call.inputs.clear();  // a freed input must not outlive its accounting

    lock.lock();
    if (!failure.empty()) {
      Abort("op '" + ForMessage(o.name) + "' (" + ForMessage(o.type) + ") failed on " + ForMessage(d.name) + ": " +
                failure,
            /*oom=*/false);
      return;
    }
    if (stop_) return;
    Finish(op, device, start_us, end_us, call.outputs, stand_in);
  }
}

void Step::Finish(int32_t op, int32_t device, double start_us, double end_us, std::vector<at::Tensor>& outputs,
                  bool stand_in) {
  const Op& o = graph_.op(op);
  last_end_us_ = std::max(last_end_us_, end_us);
  DeviceStats& stats = result_.devices[device];
  stats.compute_us[static_cast<int>(o.phase)] += end_us - start_us;
  ++stats.num_ops;
  step_.op_time_us[op] = end_us - start_us;
  step_.op_stand_in[op] = stand_in;
  if (impl_.options.record_events) result_.op_events.push_back({op, device, start_us, end_us});
  if (impl_.keep_index[op] >= 0) Keep(op, outputs);
  ledger_.Free(device, o.temporary_bytes, end_us);

  std::vector<int32_t> released;
  uint64_t sent_to = 0;  // devices this op's outputs are sent to
  for (size_t i = 0; i < outputs.size(); ++i) {
    const int32_t t = plan_.tensor(op, static_cast<int32_t>(i));
    const uint64_t destinations = plan_.destinations[t];
    sends_left_[t] = std::popcount(destinations);
    if (plan_.reads[static_cast<size_t>(t) * devices_ + device] > 0 || destinations != 0) {
      Value(t, device) = std::move(outputs[i]);
    } else {
      ledger_.Free(device, plan_.tensor_local_bytes[t], end_us);  // nobody reads it
    }
    for (int32_t to = 0; to < devices_; ++to) {
      if (destinations & (uint64_t{1} << to)) channels_.at({device, to}).queue.push_back(t);
    }
    sent_to |= destinations;
  }
  // Consumers here are released at once; others when their copy arrives.
  for (int32_t e : graph_.out_data_edges(op)) {
    const int32_t dst = graph_.data_edges()[e].dst;
    if (placement_[dst] == device && --pending_[dst] == 0) released.push_back(dst);
  }
  for (int32_t next : graph_.control_successors(op)) {
    if (--pending_[next] == 0) released.push_back(next);
  }
  for (int32_t e : graph_.in_data_edges(op)) {
    const DataEdge& edge = graph_.data_edges()[e];
    DropRead(plan_.tensor(edge.src, edge.src_output), device, end_us);
  }
  Enqueue(released);
  // Copies after the ops released with them, as the simulator queues them.
  for (int32_t to = 0; to < devices_; ++to) {
    if (!(sent_to & (uint64_t{1} << to))) continue;
    Channel& channel = channels_.at({device, to});
    if (channel.engine >= 0) {
      StartCopy(device, to);
    } else {
      channel.cv.notify_all();
    }
  }
  if (++ops_done_ == graph_.num_ops()) {
    stop_ = true;
    for (auto& cv : device_cv_) cv->notify_all();
    for (auto& [pair, channel] : channels_) channel.cv.notify_all();
  }
}

void Step::DropRead(int32_t tensor, int32_t device, double now_us) {
  if (--reads_left_[static_cast<size_t>(tensor) * devices_ + device] > 0) return;
  if (placement_[plan_.tensor_producer[tensor]] == device) {
    MaybeFreeAtProducer(tensor, now_us);
  } else {
    ledger_.Free(device, plan_.tensor_bytes[tensor], now_us);
    Value(tensor, device) = at::Tensor();
  }
}

void Step::MaybeFreeAtProducer(int32_t tensor, double now_us) {
  const int32_t device = placement_[plan_.tensor_producer[tensor]];
  if (reads_left_[static_cast<size_t>(tensor) * devices_ + device] > 0 || sends_left_[tensor] > 0) return;
  ledger_.Free(device, plan_.tensor_local_bytes[tensor], now_us);
  Value(tensor, device) = at::Tensor();
}

void Step::Enqueue(std::vector<int32_t>& released) {
  // Ops released together go by rank, as the simulator breaks ties.
  std::sort(released.begin(), released.end(), [&](int32_t a, int32_t b) { return impl_.rank[a] < impl_.rank[b]; });
  for (int32_t op : released) {
    ready_[placement_[op]].push_back(op);
    device_cv_[placement_[op]]->notify_all();
  }
}

void Step::Copier(int32_t from, int32_t to) {
  Channel& channel = channels_.at({from, to});
  std::unique_lock lock(mu_);
  while (true) {
    channel.cv.wait(lock, [&] { return stop_ || !channel.queue.empty(); });
    if (stop_) return;
    const int32_t t = channel.queue.front();
    channel.queue.pop_front();
    if (!Copy(t, from, to, lock)) return;
  }
}

void Step::StartCopy(int32_t from, int32_t to) {
  Channel& channel = channels_.at({from, to});
  if (channel.busy || channel.queue.empty() || stop_) return;
  channel.busy = true;
  copy_tasks_.push_back({channel.queue.front(), from, to});
  channel.queue.pop_front();
  ready_[channel.engine].push_back(~static_cast<int32_t>(copy_tasks_.size() - 1));
  device_cv_[channel.engine]->notify_all();
}

bool Step::Copy(int32_t t, int32_t from, int32_t to, std::unique_lock<std::mutex>& lock) {
  const Device& d = cluster_.devices[to];
  if (!ledger_.Allocate(to, plan_.tensor_bytes[t], NowUs())) {
    Abort("out of memory on " + ForMessage(d.name) + ": a copy of '" +
              ForMessage(graph_.op(plan_.tensor_producer[t]).name) + "' needs " + FormatBytes(plan_.tensor_bytes[t]) +
              " more with " + FormatBytes(ledger_.in_use(to)) + " in use of " + FormatBytes(d.usable_memory_bytes()) +
              " usable",
          /*oom=*/true);
    return false;
  }
  const at::Tensor source = Value(t, from);
  lock.unlock();

  std::string failure;
  at::Tensor copy;
  const double start_us = NowUs();
  try {
    // Fresh memory of the receiver's, written by a thread on the receiver's
    // cores where it has any.
    copy = at::empty(source.sizes(), source.options().device(TorchDevice(d)));
    copy.copy_(source);
    if (copy.is_cuda()) torch::cuda::synchronize(copy.device().index());
    if (source.is_cuda()) torch::cuda::synchronize(source.device().index());
  } catch (const std::exception& e) {
    failure = FirstLine(e.what());
  }
  const double end_us = NowUs();

  lock.lock();
  if (!failure.empty()) {
    Abort("copy to " + ForMessage(d.name) + " failed: " + failure, /*oom=*/false);
    return false;
  }
  if (stop_) return false;
  Arrived(t, from, to, start_us, end_us, std::move(copy));
  return true;
}

void Step::Arrived(int32_t tensor, int32_t from, int32_t to, double start_us, double end_us, at::Tensor value) {
  last_end_us_ = std::max(last_end_us_, end_us);
  const int64_t bytes = plan_.tensor_bytes[tensor];
  DeviceStats& out = result_.devices[from];
  DeviceStats& in = result_.devices[to];
  out.copy_out_us += end_us - start_us;
  in.copy_in_us += end_us - start_us;
  out.bytes_out = SaturatingAddBytes(out.bytes_out, bytes);
  in.bytes_in = SaturatingAddBytes(in.bytes_in, bytes);
  const int32_t producer = plan_.tensor_producer[tensor];
  const int32_t output = tensor - plan_.tensor_begin[producer];
  if (impl_.options.record_events) {
    const auto route = cluster_.Route(from, to);
    result_.transfer_events.push_back(
        {producer, output, from, to, route.empty() ? 0 : route.front().channel, start_us, end_us, bytes});
  }
  Value(tensor, to) = std::move(value);
  --sends_left_[tensor];
  MaybeFreeAtProducer(tensor, end_us);
  std::vector<int32_t> released;
  for (int32_t e : graph_.out_data_edges(producer)) {
    const DataEdge& edge = graph_.data_edges()[e];
    if (edge.src_output == output && placement_[edge.dst] == to && --pending_[edge.dst] == 0)
      released.push_back(edge.dst);
  }
  Enqueue(released);
}

void Step::Abort(std::string reason, bool oom) {
  if (stop_) return;
  stop_ = true;
  if (oom) {
    result_.oom = true;
  } else {
    result_.failed = true;
  }
  result_.reason = std::move(reason);
  for (auto& cv : device_cv_) cv->notify_all();
  for (auto& [pair, channel] : channels_) channel.cv.notify_all();
}

void Step::Keep(int32_t op, const std::vector<at::Tensor>& outputs) {
  std::vector<uint8_t>& bytes = step_.kept[impl_.keep_index[op]];
  auto append = [&](const at::Tensor& t) {
    if (!t.defined()) return;
    const at::Tensor c = t.contiguous().cpu();
    const auto* p = static_cast<const uint8_t*>(c.data_ptr());
    bytes.insert(bytes.end(), p, p + c.nbytes());
  };
  for (const at::Tensor& t : outputs) append(t);
  for (const at::Tensor& t : impl_.states[op].tensors) append(t);
}

ExecStep Step::Run() {
  const int32_t n = graph_.num_ops();
  result_.devices.assign(devices_, DeviceStats{});
  step_.op_time_us.assign(n, 0);
  step_.op_stand_in.assign(n, false);
  step_.kept.assign(impl_.options.keep_outputs_of.size(), {});
  values_.assign(static_cast<size_t>(plan_.num_tensors()) * devices_, at::Tensor());
  reads_left_ = plan_.reads;
  sends_left_.assign(plan_.num_tensors(), 0);
  pending_ = plan_.pending_inputs;
  ready_.assign(devices_, {});
  for (int32_t d = 0; d < devices_; ++d) device_cv_.push_back(std::make_unique<std::condition_variable>());

  auto finish = [&] {
    for (int32_t d = 0; d < devices_; ++d) {
      result_.devices[d].persistent_bytes = plan_.persistent_bytes[d];
      result_.devices[d].peak_memory_bytes = ledger_.peak(d);
      result_.devices[d].oom = ledger_.oom(d);
    }
    result_.step_time_us = last_end_us_;
    if (impl_.options.record_events) result_.memory_events = std::move(ledger_.events());
    step_.result = std::move(result_);
    return std::move(step_);
  };

  // Parameters and optimizer slots are held all step.
  for (int32_t d = 0; d < devices_; ++d) {
    if (!ledger_.Allocate(d, plan_.persistent_bytes[d], 0)) {
      result_.oom = true;
      result_.reason = "out of memory on " + ForMessage(cluster_.devices[d].name) +
                       ": the persistent memory of its ops (" + FormatBytes(plan_.persistent_bytes[d]) +
                       ") exceeds its usable " + FormatBytes(cluster_.devices[d].usable_memory_bytes());
      return finish();
    }
  }

  // The channels this placement uses: an ordered pair of devices each.
  for (int32_t t = 0; t < plan_.num_tensors(); ++t) {
    for (int32_t to = 0; to < devices_; ++to) {
      if (plan_.destinations[t] & (uint64_t{1} << to)) channels_[{placement_[plan_.tensor_producer[t]], to}];
    }
  }
  std::vector<int32_t> released;
  for (int32_t op = 0; op < n; ++op) {
    if (pending_[op] == 0) released.push_back(op);
  }
  if (n == 0) return finish();

  // A channel touching a CPU device of this machine is served by that
  // device's workers, between its ops: the receiver's, or the sender's when
  // the receiver is a GPU (the simulator's copy engine). A copy on a core
  // then neither preempts the op running there nor waits for a thread of
  // its own to wake. GPU to GPU copies have a thread each.
  int32_t threads = 0;
  for (auto& [pair, channel] : channels_) {
    const auto [from, to] = pair;
    channel.engine = cluster_.CopyEngine(from, to);
    threads += channel.engine < 0;
  }
  for (const Device& d : cluster_.devices) threads += d.kind == DeviceKind::kGpu ? 1 : d.parallel_ops;
  std::latch ready(threads + 1), go(1);
  std::vector<std::thread> pool;
  auto start_thread = [&](std::vector<int32_t> cores, auto body) {
    pool.emplace_back([&, cores = std::move(cores), body] {
      SetUpThread(cores);
      c10::InferenceMode no_autograd;
      ready.count_down();
      go.wait();
      body();
    });
  };
  for (int32_t d = 0; d < devices_; ++d) {
    const Device& device = cluster_.devices[d];
    const int32_t workers = device.kind == DeviceKind::kGpu ? 1 : device.parallel_ops;
    for (int32_t w = 0; w < workers; ++w) start_thread(device.cores, [this, d] { Worker(d); });
  }
  for (auto& [pair, channel] : channels_) {
    if (channel.engine >= 0) continue;
    const auto [from, to] = pair;
    start_thread(cluster_.devices[from].cores, [this, from = from, to = to] { Copier(from, to); });
  }
  ready.arrive_and_wait();
  {
    std::lock_guard lock(mu_);
    t0_ = Clock::now();
    Enqueue(released);
  }
  go.count_down();
  for (std::thread& t : pool) t.join();
  values_.clear();
  return finish();
}

}  // namespace

Executor::Executor(const Graph& graph, const Cluster& cluster, ExecOptions options)
    : impl_(std::make_unique<Impl>(graph, cluster, std::move(options))) {
  CheckClusterIsThisMachine(cluster, "cluster '" + cluster.name + "'");
  KeepFreedHostMemory();
  const int32_t n = graph.num_ops();
  impl_->rank = RankOps(graph);
  impl_->kernels.resize(n);
  impl_->import_gradients.resize(n);
  for (int32_t op = 0; op < n; ++op) impl_->kernels[op] = KernelFor(graph, op, &impl_->import_gradients[op]);
  impl_->states.resize(n);
  impl_->state_device.assign(n, -1);
  impl_->declined.assign(n, 0);
  impl_->why.assign(n, "");
  impl_->keep_index.assign(n, -1);
  for (size_t i = 0; i < impl_->options.keep_outputs_of.size(); ++i) {
    const int32_t op = impl_->options.keep_outputs_of[i];
    if (op >= 0 && op < n) impl_->keep_index[op] = static_cast<int32_t>(i);
  }
  impl_->saved_threads = at::get_num_threads();
}

Executor::~Executor() {
  // The step's threads set torch's global intra-op count to 1; give the
  // rest of the program (a learned placer's networks) its own back.
  at::set_num_threads(impl_->saved_threads);
}

const Graph& Executor::graph() const { return impl_->graph; }
const Cluster& Executor::cluster() const { return impl_->cluster; }
int64_t Executor::steps_run() const { return impl_->steps_run; }

ExecStep Executor::RunStep(const Placement& placement) {
  if (auto problem = CheckPlacement(impl_->graph, impl_->cluster, placement)) {
    ExecStep step;
    step.result.invalid = true;
    step.result.reason = *problem;
    step.result.devices.assign(impl_->cluster.num_devices(), DeviceStats{});
    return step;
  }
  ExecStep step = Step(*impl_, placement).Run();
  ++impl_->steps_run;
  // Stand-ins by type, from the ops that ran.
  std::map<std::string, StandInUse> by_type;
  for (int32_t op = 0; op < impl_->graph.num_ops(); ++op) {
    step.busy_us += step.op_time_us[op];
    if (!step.op_stand_in[op]) continue;
    const Op& o = impl_->graph.op(op);
    StandInUse& use = by_type[o.type];
    use.type = o.type;
    ++use.ops;
    use.busy_us += step.op_time_us[op];
    if (use.why.empty()) use.why = impl_->kernels[op] == nullptr ? "no kernel" : impl_->why[op];
  }
  for (auto& [type, use] : by_type) step.stand_ins.push_back(std::move(use));
  std::sort(step.stand_ins.begin(), step.stand_ins.end(), [](const StandInUse& a, const StandInUse& b) {
    return a.busy_us != b.busy_us ? a.busy_us > b.busy_us : a.type < b.type;
  });
  return step;
}

ExecMeasurement MeasureRealStepTime(Executor& executor, const Placement& placement, int32_t steps) {
  ExecMeasurement m;
  double total_us = 0;
  // The first step pays for first touches and kernels' set-up: dropped. A
  // fresh executor's second step still grows the heap (the kernels' state,
  // made in the first, now sits among the freed tensors): on this machine's
  // VM it took 6,000-15,000 page faults and 1.5-2x a later step's time
  // (docs/executor.md, "Measuring"). So a fresh executor drops two.
  const int32_t warm_up = steps > 1 && executor.steps_run() == 0 ? 1 : 0;
  const int32_t dropped = (steps == 1 ? 0 : 1) + warm_up;
  for (int32_t s = 0; s < std::max(steps, 1) + warm_up; ++s) {
    m.last = executor.RunStep(placement);
    if (!m.last.result.ok()) {
      m.protocol.ok = false;
      break;
    }
    if (s >= dropped) {
      total_us += m.last.result.step_time_us;
      ++m.protocol.steps_averaged;
    }
  }
  m.protocol.mean_step_time_us = m.protocol.steps_averaged > 0 ? total_us / m.protocol.steps_averaged : 0;
  m.protocol.last = m.last.result;
  return m;
}

}  // namespace devplace
