#include "exec/distributed/evaluation.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>

#include "exec/distributed/evaluation_messages.h"
#include "exec/distributed/kill_point.h"
#include "util/error.h"

namespace devplace {
namespace {

// The i-th of `parts` contiguous slices of n items: [first, first + count).
void SliceOf(size_t n, size_t parts, size_t i, size_t& first, size_t& count) {
  const size_t base = n / parts, extra = n % parts;
  first = i * base + std::min(i, extra);
  count = base + (i < extra ? 1 : 0);
}

std::vector<Placement> Slice(const std::vector<Placement>& placements, size_t first, size_t count) {
  return std::vector<Placement>(placements.begin() + static_cast<std::ptrdiff_t>(first),
                                placements.begin() + static_cast<std::ptrdiff_t>(first + count));
}

bool SameOptions(const SimulatedEnvironmentOptions& a, const SimulatedEnvironmentOptions& b) {
  return a.workers == b.workers && a.noise.jitter == b.noise.jitter &&
         a.noise.failure_probability == b.noise.failure_probability && a.measure_steps == b.measure_steps &&
         a.seed == b.seed && a.cache_bytes == b.cache_bytes && a.measure_overflow == b.measure_overflow;
}

}  // namespace

EvaluationPool::EvaluationPool(World& world, bool controller_measures, std::optional<std::vector<int32_t>> workers)
    : world_(world), controller_measures_(controller_measures) {
  if (workers) {
    ranks_ = std::move(*workers);
  } else {
    for (int32_t r = 0; r < world.size(); ++r) {
      if (r != world.rank()) ranks_.push_back(r);
    }
  }
  live_.assign(ranks_.size(), true);
  next_message_.assign(ranks_.size(), 0);
}

EvaluationPool::~EvaluationPool() {
  try {
    Finish(std::uncaught_exceptions() > 0);
  } catch (const std::exception&) {
    // The store is gone with the process's end; the workers see it go.
  }
}

std::vector<int32_t> EvaluationPool::live_workers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int32_t> live;
  for (size_t w = 0; w < ranks_.size(); ++w) {
    if (live_[w]) live.push_back(ranks_[w]);
  }
  return live;
}

int64_t EvaluationPool::dropped_workers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t dropped = 0;
  for (bool live : live_) dropped += live ? 0 : 1;
  return dropped;
}

void EvaluationPool::Drop(size_t worker) {
  live_[worker] = false;
  // A worker that is only slow reads this after its late answer and ends.
  EvaluationJob dropped;
  dropped.kind = JobKind::kDropped;
  world_.Put(JobKey(ranks_[worker], next_message_[worker]++), EncodeJob(dropped));
}

void EvaluationPool::Finish(bool failed) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  finished_ = true;
  EvaluationJob end;
  end.kind = failed ? JobKind::kFailed : JobKind::kStop;
  for (size_t w = 0; w < ranks_.size(); ++w) {
    if (live_[w]) world_.Put(JobKey(ranks_[w], next_message_[w]++), EncodeJob(end));
  }
  if (failed) return;
  // The store lives in this process: each worker says it read the stop
  // before the process may end, or it would find the store gone and report
  // a lost controller. One that never says so is waited for no longer than
  // the timeout.
  for (size_t w = 0; w < ranks_.size(); ++w) {
    if (live_[w]) world_.Take(ByeKey(ranks_[w]), world_.timeout_s());
  }
}

int64_t EvaluationPool::placements_measured_by_workers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return measured_by_workers_;
}

std::vector<Outcome> EvaluationPool::Measure(const LocalMeasure& local, const SimulatedEnvironmentOptions& options,
                                             const std::vector<Placement>& placements, int64_t batch, int32_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Outcome> outcomes(placements.size());
  auto measure_here = [&](const Range& range) {
    std::vector<Outcome> mine = local(Slice(placements, range.first, range.count), static_cast<int32_t>(range.first));
    std::copy(mine.begin(), mine.end(), outcomes.begin() + static_cast<std::ptrdiff_t>(range.first));
  };
  // Each round deals ranges of the batch over the workers still answering:
  // the whole batch first, then what the workers dropped in the round before
  // left, until nothing is left. Every round drops a worker or ends, so it
  // ends; rank 0 measures whatever is left once no worker is.
  std::vector<Range> to_deal = {{0, placements.size()}};
  while (!to_deal.empty()) {
    std::vector<Sent> sent;
    std::vector<Range> here = Deal(to_deal, placements, options, batch, stream, sent);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(world_.timeout_s());
    for (const Range& range : here) measure_here(range);
    to_deal.clear();
    struct Dropped {
      size_t worker;
      std::string why;
      int64_t placements;
    };
    std::vector<Dropped> dropped;
    for (const Sent& s : sent) {
      if (!live_[s.worker]) {  // dropped earlier in this round: the rest of its ranges too
        for (Dropped& d : dropped) d.placements += d.worker == s.worker ? static_cast<int64_t>(s.range.count) : 0;
        to_deal.push_back(s.range);
        continue;
      }
      const double left_s = std::max(0.001, std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count());
      std::optional<std::string> answer = world_.Take(ResultKey(ranks_[s.worker], s.message), left_s);
      std::string why;
      if (answer) {
        try {
          std::vector<Outcome> theirs = DecodeOutcomes(*answer, s.range.count);
          std::copy(theirs.begin(), theirs.end(), outcomes.begin() + static_cast<std::ptrdiff_t>(s.range.first));
          measured_by_workers_ += static_cast<int64_t>(s.range.count);
          continue;
        } catch (const Error& e) {
          why = e.what();
        }
      } else {
        why = "no answer within " + ShowSeconds(world_.timeout_s()) + ", DEVPLACE_DIST_TIMEOUT_S";
      }
      Drop(s.worker);
      dropped.push_back({s.worker, why, static_cast<int64_t>(s.range.count)});
      to_deal.push_back(s.range);
    }
    for (const Dropped& d : dropped) {
      std::fprintf(stderr, "devplace: distributed run: dropped worker rank %d (%s); its %lld placements go to %s\n",
                   ranks_[d.worker], d.why.c_str(), static_cast<long long>(d.placements), TakersLine().c_str());
    }
  }
  return outcomes;
}

std::vector<EvaluationPool::Range> EvaluationPool::Deal(const std::vector<Range>& ranges,
                                                        const std::vector<Placement>& placements,
                                                        const SimulatedEnvironmentOptions& options, int64_t batch,
                                                        int32_t stream, std::vector<Sent>& sent) {
  std::vector<size_t> workers;
  for (size_t w = 0; w < ranks_.size(); ++w) {
    if (live_[w]) workers.push_back(w);
  }
  // Slices of each range in rank order: workers first, this rank (which
  // also runs the controller) last, and the smallest when the range does
  // not divide; none for this rank when it does not measure and a worker is
  // left.
  const bool here = controller_measures_ || workers.empty();
  const size_t parts = workers.size() + (here ? 1 : 0);
  std::vector<Range> mine;
  for (const Range& range : ranges) {
    for (size_t i = 0; i < workers.size(); ++i) {
      size_t first = 0, count = 0;
      SliceOf(range.count, parts, i, first, count);
      if (count == 0) continue;
      EvaluationJob job;
      job.batch = batch;
      job.stream = stream;
      job.first_sample = static_cast<int32_t>(range.first + first);
      job.options = options;
      job.placements = Slice(placements, range.first + first, count);
      const size_t w = workers[i];
      sent.push_back({w, {range.first + first, count}, next_message_[w]});
      world_.Put(JobKey(ranks_[w], next_message_[w]++), EncodeJob(job));
    }
    if (here) {
      size_t first = 0, count = 0;
      SliceOf(range.count, parts, parts - 1, first, count);
      if (count > 0) mine.push_back({range.first + first, count});
    }
  }
  return mine;
}

std::string EvaluationPool::TakersLine() const {
  std::vector<int32_t> takers;
  for (size_t w = 0; w < ranks_.size(); ++w) {
    if (live_[w]) takers.push_back(ranks_[w]);
  }
  if (controller_measures_ || takers.empty()) takers.push_back(world_.rank());
  std::string line = takers.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < takers.size(); ++i) {
    line += (i == 0 ? "" : i + 1 == takers.size() ? " and " : ", ") + std::to_string(takers[i]);
  }
  return line;
}

DistributedEnvironment::DistributedEnvironment(EvaluationPool& pool, const Graph& graph, const Cluster& cluster,
                                               const CostModel& cost, const SimulatedEnvironmentOptions& options,
                                               Environment* measured)
    : pool_(pool), options_(options), local_(graph, cluster, cost, options), measured_(measured) {}

std::vector<Outcome> DistributedEnvironment::Measure(const std::vector<Placement>& placements, int64_t batch,
                                                     int32_t stream) {
  return pool_.Measure(
      [&](const std::vector<Placement>& slice, int32_t first_sample) {
        // A real run's noise is the machine's: no seed to keep.
        return measured_ ? measured_->Measure(slice, batch, stream) : local_.MeasureSlice(slice, batch, stream, first_sample);
      },
      options_, placements, batch, stream);
}

Outcome DistributedEnvironment::MeasureOne(const Placement& placement) {
  return measured_ ? measured_->MeasureOne(placement) : local_.MeasureOne(placement);
}

void ServeEvaluations(World& world, const Graph& graph, const Cluster& cluster, const CostModel& cost, Environment* measured,
                      int32_t controller) {
  std::unique_ptr<SimulatedEnvironment> environment;
  SimulatedEnvironmentOptions environment_options;
  int64_t slices = 0;
  for (int64_t n = 0;; ++n) {
    std::optional<std::string> message;
    // Between batches the controller learns, checkpoints, writes: it may
    // be quiet for longer than the timeout, and is waited for as long as
    // its store is up.
    while (!(message = world.Take(JobKey(world.rank(), n), world.timeout_s()))) {
    }
    EvaluationJob job = DecodeJob(*message);
    if (job.kind == JobKind::kStop) {
      world.Put(ByeKey(world.rank()), "bye");
      return;
    }
    if (job.kind == JobKind::kFailed) {
      throw Error("distributed run: the controller (rank " + std::to_string(controller) + ") stopped with an error");
    }
    if (job.kind == JobKind::kDropped) {
      throw Error("distributed run: rank " + std::to_string(world.rank()) + " was dropped by the controller (rank " +
                  std::to_string(controller) + "): it answered after " +
                  ShowSeconds(world.timeout_s()) + " (DEVPLACE_DIST_TIMEOUT_S)");
    }
    KillPointForTests("DEVPLACE_TEST_KILL_WORKER", world.rank(), slices++);  // on its N-th slice
    for (const Placement& p : job.placements) {
      if (static_cast<int32_t>(p.size()) != graph.num_ops()) {
        throw Error("distributed run: rank 0 sent placements of " + std::to_string(p.size()) + " ops; this graph has " +
                    std::to_string(graph.num_ops()));
      }
    }
    if (measured) {
      world.Put(ResultKey(world.rank(), n), EncodeOutcomes(measured->Measure(job.placements, job.batch, job.stream)));
      continue;
    }
    if (!environment || !SameOptions(environment_options, job.options)) {
      environment_options = job.options;
      environment = std::make_unique<SimulatedEnvironment>(graph, cluster, cost, job.options);
    }
    world.Put(ResultKey(world.rank(), n), EncodeOutcomes(environment->MeasureSlice(job.placements, job.batch, job.stream, job.first_sample)));
  }
}

}  // namespace devplace
