#include "exec/measured_environment.h"

#include <algorithm>

#include "exec/executor.h"
#include "util/stop_request.h"

namespace devplace {

MeasuredEnvironment::MeasuredEnvironment(const Graph& graph, const Cluster& cluster,
                                         const MeasuredEnvironmentOptions& options)
    : options_(options) {
  options_.steps = std::max(options_.steps, 2);
  ExecOptions exec;
  exec.seed = options.seed;
  exec.step_time_limit_s = options.step_time_limit_s;
  executor_ = std::make_unique<Executor>(graph, cluster, exec);
}

MeasuredEnvironment::~MeasuredEnvironment() = default;

RealRun MeasuredEnvironment::Run(const Placement& placement) {
  ++runs_;
  const ExecMeasurement m = MeasureRealStepTime(*executor_, placement, options_.steps);
  RealRun run;
  if (m.protocol.ok) {
    run.outcome.ok = true;
    run.outcome.step_time_s = m.protocol.mean_step_time_us * 1e-6;
    return run;
  }
  // The executor stops at the first device out of memory, so how far the
  // whole step would overflow is not known: counted as entirely, as the
  // simulated environment does without measure_overflow.
  run.outcome.memory_overflow = m.last.result.oom ? 1 : 0;
  run.failure = m.last.result.reason.empty() ? "failed" : m.last.result.reason;
  return run;
}

std::vector<Outcome> MeasuredEnvironment::Measure(const std::vector<Placement>& placements, int64_t, int32_t) {
  std::vector<Outcome> outcomes;
  outcomes.reserve(placements.size());
  for (const Placement& placement : placements) {
    ThrowIfStopRequested();  // a real run takes seconds: the batch is dropped
    outcomes.push_back(Run(placement).outcome);
  }
  return outcomes;
}

Outcome MeasuredEnvironment::MeasureOne(const Placement& placement) { return Run(placement).outcome; }

CalibratedEnvironment::CalibratedEnvironment(const Graph& graph, const Cluster& cluster, const CostModel& cost,
                                             const CalibratedEnvironmentOptions& options, MeasuredEnvironment& real)
    : CalibratedEnvironment(std::make_unique<SimulatedEnvironment>(graph, cluster, cost, options.simulated), options, real) {}

CalibratedEnvironment::CalibratedEnvironment(std::unique_ptr<Environment> simulated,
                                             const CalibratedEnvironmentOptions& options, MeasuredEnvironment& real)
    : options_(options), simulated_(std::move(simulated)), real_(real) {
  options_.remeasure_every_batches = std::max(options_.remeasure_every_batches, 1);
  options_.remeasure_best = std::max(options_.remeasure_best, 1);
}

CalibratedEnvironment::~CalibratedEnvironment() = default;

void CalibratedEnvironment::Consider(const Placement& placement, const Outcome& outcome) {
  if (!outcome.ok) return;
  for (const auto& [time_s, kept] : best_) {
    if (kept == placement) return;
  }
  const size_t keep = static_cast<size_t>(options_.remeasure_best);
  if (best_.size() >= keep && outcome.step_time_s >= best_.back().first) return;
  best_.emplace_back(outcome.step_time_s, placement);
  std::stable_sort(best_.begin(), best_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (best_.size() > keep) best_.pop_back();
}

std::vector<Outcome> CalibratedEnvironment::Measure(const std::vector<Placement>& placements, int64_t batch,
                                                    int32_t stream) {
  std::vector<Outcome> outcomes = simulated_->Measure(placements, batch, stream);
  for (size_t i = 0; i < placements.size(); ++i) Consider(placements[i], outcomes[i]);
  if (++batches_ % options_.remeasure_every_batches == 0) RemeasureBest();
  return outcomes;
}

Outcome CalibratedEnvironment::MeasureOne(const Placement& placement) {
  Outcome outcome = simulated_->MeasureOne(placement);
  Consider(placement, outcome);
  return outcome;
}

void CalibratedEnvironment::RemeasureBest() {
  for (const auto& [time_s, placement] : best_) {
    if (StopRequested()) return;  // the rest wait for a later batch
    if (!run_.insert(placement).second) continue;
    Remeasurement r;
    r.batches = batches_;
    r.simulated_s = time_s;
    r.real = real_.Run(placement);
    remeasured_.push_back(std::move(r));
  }
}

}  // namespace devplace
