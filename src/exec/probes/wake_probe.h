// How long an idle CPU device of this machine takes to start work handed to
// it: the executor's workers sleep on a condition variable when they have
// nothing to run, and a core the guest (or the OS) let sleep long takes tens
// of microseconds to run again, against a few after a short nap.
// `clusters --detect` fits Device::wake_up_us and wake_up_after_idle_us to
// these times, and the simulator charges them (docs/simulator.md).
#pragma once

#include <cstdint>
#include <vector>

namespace devplace {

struct WakeSample {
  double idle_us = 0;     // how long the sleeper had nothing to do
  double latency_us = 0;  // from the hand-over to the sleeper running (median)
};

struct WakeUpFit {
  double wake_up_us = 0;             // the extra latency after a long idle
  double wake_up_after_idle_us = 0;  // the shortest idle that pays it
};

// For each idle time: a thread pinned to `sleeper` waits on a condition
// variable; a thread pinned to `waker` hands it work `idle_us` after it went
// to sleep, `repeats` times; the median time until the sleeper runs.
std::vector<WakeSample> MeasureWakeUps(const std::vector<int32_t>& waker, const std::vector<int32_t>& sleeper,
                                       const std::vector<double>& idle_us, int32_t repeats);

// The extra latency of the longest idle over the shortest one, and the
// shortest idle whose latency is at least half-way between the two. No
// wake-up (zeros) when that extra is under kMinWakeUpUs: a core that wakes
// as fast after a long sleep as after a short one.
inline constexpr double kMinWakeUpUs = 5;
WakeUpFit FitWakeUp(const std::vector<WakeSample>& samples);

}  // namespace devplace
