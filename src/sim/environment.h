// Measures batches of placements: what every learned placer (and any search)
// asks of the world. The simulated environment runs worker threads, each with
// its own simulator, applies the noise model and the measuring protocol
// (sim/measure.h), and remembers what the deterministic simulator said about
// placements it has seen, since converging policies resample the same ones.
// The real executor's environments (exec/measured_environment.h) are the
// others.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/placement.h"
#include "sim/simulator.h"

namespace devplace {

struct Outcome {
  bool ok = false;         // ran: no device out of memory, no failure
  double step_time_s = 0;  // the protocol's mean step time, if it ran
  // Out of memory: the share of the placement's peak memory (summed over
  // devices) beyond the devices' capacities, in (0, 1]; 0 otherwise. Only
  // measured with SimulatedEnvironmentOptions::measure_overflow, else 1.
  double memory_overflow = 0;
  bool oom() const { return memory_overflow > 0; }
};

class Environment {
 public:
  virtual ~Environment() = default;

  // Measures every placement; `batch` and `stream` (an update and the
  // controller that sampled it) give each measurement its own noise seed, so
  // a run is the same whichever thread measures what. Throws Stopped
  // (util/stop_request.h) once a stop is asked for: the batch is dropped.
  virtual std::vector<Outcome> Measure(const std::vector<Placement>& placements, int64_t batch, int32_t stream) = 0;

  // One placement, measured as the first of batch 0, stream 0 would be.
  virtual Outcome MeasureOne(const Placement& placement) = 0;

  // Whether its step times are the simulator's (with its noise), wherever
  // it runs it: then what the simulator says of a placement needs no
  // measuring in it (the learned trainer's failing time).
  virtual bool simulated() const { return false; }
};

struct SimulatedEnvironmentOptions {
  int32_t workers = 1;        // threads, each with its own simulator
  NoiseOptions noise;         // none: deterministic, and remembered
  int32_t measure_steps = 1;  // the protocol: run this many steps, drop the first, average
  uint64_t seed = 1;
  // What the memory of past measurements may hold (keys are placements, a
  // byte per op where devices fit in a byte).
  int64_t cache_bytes = int64_t{256} << 20;
  // Run out-of-memory placements to the step's end to measure how far they
  // overflow (Outcome::memory_overflow); slower on them than stopping at the
  // first overflow.
  bool measure_overflow = false;
};

class SimulatedEnvironment : public Environment {
 public:
  // `graph`, `cluster` and `cost` must outlive the environment.
  SimulatedEnvironment(const Graph& graph, const Cluster& cluster, const CostModel& cost,
                       const SimulatedEnvironmentOptions& options);

  std::vector<Outcome> Measure(const std::vector<Placement>& placements, int64_t batch, int32_t stream) override;
  Outcome MeasureOne(const Placement& placement) override;
  bool simulated() const override { return true; }
  // `placements` as samples first_sample, first_sample + 1, ... of (batch,
  // stream): a slice of a batch measured by another process gets the noise
  // it would get in the whole batch (exec/distributed).
  std::vector<Outcome> MeasureSlice(const std::vector<Placement>& placements, int64_t batch, int32_t stream,
                                    int32_t first_sample);

 private:
  Outcome Run(Simulator& simulator, const Placement& placement, uint64_t seed);
  Outcome Remembered(Simulator& simulator, const Placement& placement, uint64_t seed);
  double MemoryOverflow(const SimResult& result) const;

  SimulatedEnvironmentOptions options_;
  const Cluster& cluster_;  // its devices' capacities
  int32_t num_devices_;
  std::vector<std::unique_ptr<Simulator>> simulators_;
  std::mutex cache_mutex_;
  std::unordered_map<std::string, Outcome> cache_;
  int64_t cache_bytes_used_ = 0;
};

// Makes the environment a learned placer measures in, given what the
// simulated one would be made with; a caller that wants placements judged
// otherwise (`devplace place --reward measured`: by running them) passes
// one. An empty factory means the SimulatedEnvironment.
using EnvironmentFactory = std::function<std::unique_ptr<Environment>(
    const Graph& graph, const Cluster& cluster, const CostModel& cost, const SimulatedEnvironmentOptions& options)>;

}  // namespace devplace
