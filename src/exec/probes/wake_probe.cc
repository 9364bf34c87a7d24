#include "exec/probes/wake_probe.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "exec/host_cpus.h"

namespace devplace {

WakeUpFit FitWakeUp(const std::vector<WakeSample>& samples) {
  WakeUpFit fit;
  if (samples.size() < 2) return fit;
  std::vector<WakeSample> by_idle = samples;
  std::sort(by_idle.begin(), by_idle.end(), [](const WakeSample& a, const WakeSample& b) { return a.idle_us < b.idle_us; });
  const double short_us = by_idle.front().latency_us;
  const double extra_us = by_idle.back().latency_us - short_us;
  if (!(extra_us >= kMinWakeUpUs)) return fit;
  fit.wake_up_us = extra_us;
  for (const WakeSample& s : by_idle) {
    if (s.latency_us >= short_us + extra_us / 2) {
      fit.wake_up_after_idle_us = s.idle_us;
      break;
    }
  }
  return fit;
}

namespace {

using Clock = std::chrono::steady_clock;

// The two threads' meeting point: the waker posts work and its time, the
// sleeper takes it and says when it ran.
struct Bell {
  std::mutex mu;
  std::condition_variable cv;
  Clock::time_point rung;
  bool ringing = false;
  bool answered = false;
  bool quit = false;
  double latency_us = 0;
};

void Sleep(Bell& bell, const std::vector<int32_t>& cores) {
  PinThisThread(cores);
  std::unique_lock lock(bell.mu);
  while (true) {
    bell.cv.wait(lock, [&] { return bell.ringing || bell.quit; });
    if (bell.quit) return;
    bell.latency_us = std::chrono::duration<double, std::micro>(Clock::now() - bell.rung).count();
    bell.ringing = false;
    bell.answered = true;
    bell.cv.notify_all();
  }
}

}  // namespace

std::vector<WakeSample> MeasureWakeUps(const std::vector<int32_t>& waker, const std::vector<int32_t>& sleeper,
                                       const std::vector<double>& idle_us, int32_t repeats) {
  std::vector<WakeSample> samples;
  Bell bell;
  std::thread sleeper_thread(Sleep, std::ref(bell), std::cref(sleeper));
  std::thread waker_thread([&] {
    PinThisThread(waker);
    for (double idle : idle_us) {
      std::vector<double> latencies;
      for (int32_t r = 0; r < std::max(repeats, 1); ++r) {
        // The sleeper went back to its wait when it answered (it holds the
        // lock until then); spinning, not sleeping, keeps this thread's own
        // wake-up out of the time.
        const auto until = Clock::now() + std::chrono::duration<double, std::micro>(idle);
        while (Clock::now() < until) {
        }
        std::unique_lock lock(bell.mu);
        bell.answered = false;
        bell.ringing = true;
        bell.rung = Clock::now();
        bell.cv.notify_all();
        bell.cv.wait(lock, [&] { return bell.answered; });
        latencies.push_back(bell.latency_us);
      }
      std::nth_element(latencies.begin(), latencies.begin() + latencies.size() / 2, latencies.end());
      samples.push_back({idle, latencies[latencies.size() / 2]});
    }
    std::lock_guard lock(bell.mu);
    bell.quit = true;
    bell.cv.notify_all();
  });
  waker_thread.join();
  sleeper_thread.join();
  return samples;
}

}  // namespace devplace
