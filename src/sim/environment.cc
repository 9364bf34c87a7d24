#include "sim/environment.h"

#include <algorithm>
#include <thread>

#include "sim/measure.h"
#include "util/parallel_for.h"
#include "util/stop_request.h"

namespace devplace {
namespace {

// A seed for one measurement, unique to (run seed, batch, stream, sample).
uint64_t MixSeed(uint64_t seed, int64_t batch, int32_t stream, int32_t sample) {
  uint64_t x = seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(batch + 1));
  x ^= 0xBF58476D1CE4E5B9ull * static_cast<uint64_t>(stream + 1);
  x ^= 0x94D049BB133111EBull * static_cast<uint64_t>(sample + 1);
  return x;
}

// A placement as a compact key: a byte per op when device numbers fit.
std::string KeyOf(const Placement& placement, int32_t num_devices) {
  if (num_devices <= 256) {
    std::string key(placement.size(), '\0');
    for (size_t i = 0; i < placement.size(); ++i) key[i] = static_cast<char>(static_cast<uint8_t>(placement[i]));
    return key;
  }
  return std::string(reinterpret_cast<const char*>(placement.data()), placement.size() * sizeof(int32_t));
}

}  // namespace

SimulatedEnvironment::SimulatedEnvironment(const Graph& graph, const Cluster& cluster, const CostModel& cost,
                                           const SimulatedEnvironmentOptions& options)
    : options_(options), cluster_(cluster), num_devices_(cluster.num_devices()) {
  for (int32_t w = 0; w < std::max(1, options.workers); ++w) {
    simulators_.push_back(std::make_unique<Simulator>(graph, cluster, cost));
  }
}

Outcome SimulatedEnvironment::Run(Simulator& simulator, const Placement& placement, uint64_t seed) {
  MeasureOptions measure;
  measure.steps = options_.measure_steps;
  measure.noise = options_.noise;
  measure.seed = seed;
  measure.stop_at_oom = !options_.measure_overflow;
  Measurement m = MeasureStepTime(simulator, placement, measure);
  Outcome outcome{m.ok, m.mean_step_time_us * 1e-6};
  if (!m.ok && m.last.oom) outcome.memory_overflow = options_.measure_overflow ? MemoryOverflow(m.last) : 1.0;
  return outcome;
}

double SimulatedEnvironment::MemoryOverflow(const SimResult& result) const {
  // In doubles: a saturated count (kSaturatedBytes) stays far over capacity.
  double peak_bytes = 0, over_bytes = 0;
  for (int32_t d = 0; d < num_devices_; ++d) {
    const double peak = static_cast<double>(result.devices[d].peak_memory_bytes);
    peak_bytes += peak;
    over_bytes += std::max(0.0, peak - static_cast<double>(cluster_.devices[d].usable_memory_bytes()));
  }
  // Never 0 for a placement out of memory, whatever the rounding.
  return peak_bytes > 0 ? std::clamp(over_bytes / peak_bytes, 1e-9, 1.0) : 1.0;
}

// The deterministic simulator gives a placement the same time every time.
Outcome SimulatedEnvironment::Remembered(Simulator& simulator, const Placement& placement, uint64_t seed) {
  if (options_.noise.enabled()) return Run(simulator, placement, seed);
  std::string key = KeyOf(placement, num_devices_);
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  Outcome outcome = Run(simulator, placement, seed);
  std::lock_guard<std::mutex> lock(cache_mutex_);
  const int64_t bytes = static_cast<int64_t>(key.size()) + 64;  // the key and the map's own overhead
  if (cache_bytes_used_ + bytes <= options_.cache_bytes && cache_.emplace(std::move(key), outcome).second) {
    cache_bytes_used_ += bytes;
  }
  return outcome;
}

std::vector<Outcome> SimulatedEnvironment::Measure(const std::vector<Placement>& placements, int64_t batch,
                                                   int32_t stream) {
  return MeasureSlice(placements, batch, stream, 0);
}

std::vector<Outcome> SimulatedEnvironment::MeasureSlice(const std::vector<Placement>& placements, int64_t batch,
                                                        int32_t stream, int32_t first_sample) {
  std::vector<Outcome> outcomes(placements.size());
  StridedParallelFor(placements.size(), simulators_.size(), [&](size_t w, size_t k) {
    // A simulation of a big graph takes a second: the batch is dropped at
    // the next one (below, out of the worker threads).
    StopTestPoint("measure");
    if (StopRequested()) return;
    outcomes[k] = Remembered(*simulators_[w], placements[k], MixSeed(options_.seed, batch, stream, first_sample + static_cast<int32_t>(k)));
  });
  ThrowIfStopRequested();
  return outcomes;
}

Outcome SimulatedEnvironment::MeasureOne(const Placement& placement) {
  return Run(*simulators_[0], placement, MixSeed(options_.seed, 0, 0, 0));
}

}  // namespace devplace
