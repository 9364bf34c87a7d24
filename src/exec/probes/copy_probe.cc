#include "exec/probes/copy_probe.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/host_cpus.h"

namespace devplace {

LinkFit FitLink(const std::vector<CopySample>& samples) {
  // Weighted least squares, weight 1/t^2: minimises the relative error.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  const CopySample* largest = nullptr;
  for (const CopySample& s : samples) {
    if (s.bytes <= 0 || s.time_us <= 0) continue;
    const double w = 1.0 / (s.time_us * s.time_us);
    const double x = static_cast<double>(s.bytes);
    sw += w;
    sx += w * x;
    sy += w * s.time_us;
    sxx += w * x * x;
    sxy += w * x * s.time_us;
    if (largest == nullptr || s.bytes > largest->bytes) largest = &s;
  }
  assert(largest != nullptr);
  LinkFit fit;
  const double denominator = sw * sxx - sx * sx;
  const double slope = denominator > 0 ? (sw * sxy - sx * sy) / denominator : 0;
  if (slope > 0) {
    fit.latency_us = std::max(0.0, (sy - slope * sx) / sw);
    fit.bandwidth_bytes_per_s = 1e6 / slope;
  } else {
    fit.latency_us = 0;
    fit.bandwidth_bytes_per_s = static_cast<double>(largest->bytes) / (largest->time_us * 1e-6);
  }
  return fit;
}

namespace {

using Clock = std::chrono::steady_clock;

// Tells the compiler the memory behind `p` is used: a copy into a buffer
// freed unread is otherwise removed as a dead store, and the probe times
// nothing.
inline void KeepWritten(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

// The two threads' meeting point: the sender publishes a written buffer and
// its time, the receiver copies it and says when it is done.
struct HandOver {
  std::mutex mu;
  std::condition_variable cv;
  const char* src = nullptr;
  int64_t bytes = 0;
  Clock::time_point sent;
  bool ready = false;
  bool done = false;
  bool quit = false;
  double time_us = 0;
};

void Receive(HandOver& h, const std::vector<int32_t>& cores) {
  PinThisThread(cores);
  std::unique_lock lock(h.mu);
  while (true) {
    h.cv.wait(lock, [&] { return h.ready || h.quit; });
    if (h.quit) return;
    h.ready = false;
    // As the executor does: fresh memory of the receiver's, then the copy.
    char* dst = static_cast<char*>(std::aligned_alloc(64, static_cast<size_t>((h.bytes + 63) / 64 * 64)));
    if (dst != nullptr) std::memcpy(dst, h.src, static_cast<size_t>(h.bytes));
    KeepWritten(dst);
    h.time_us = std::chrono::duration<double, std::micro>(Clock::now() - h.sent).count();
    std::free(dst);
    h.done = true;
    h.cv.notify_all();
  }
}

}  // namespace

std::vector<CopySample> MeasureCopies(const std::vector<int32_t>& from, const std::vector<int32_t>& to,
                                      const std::vector<int64_t>& sizes_bytes, int32_t repeats) {
  std::vector<CopySample> samples;
  HandOver h;
  std::thread receiver(Receive, std::ref(h), std::cref(to));
  std::thread sender([&] {
    PinThisThread(from);
    for (int64_t bytes : sizes_bytes) {
      char* src = static_cast<char*>(std::aligned_alloc(64, static_cast<size_t>((bytes + 63) / 64 * 64)));
      if (src == nullptr) continue;
      double best_us = std::numeric_limits<double>::infinity();
      for (int32_t r = 0; r < repeats; ++r) {
        std::memset(src, r & 0xff, static_cast<size_t>(bytes));  // written here, as a producing op would
        std::unique_lock lock(h.mu);
        h.src = src;
        h.bytes = bytes;
        h.done = false;
        h.ready = true;
        h.sent = Clock::now();
        h.cv.notify_all();
        h.cv.wait(lock, [&] { return h.done; });
        best_us = std::min(best_us, h.time_us);
      }
      std::free(src);
      samples.push_back({bytes, best_us});
    }
    std::lock_guard lock(h.mu);
    h.quit = true;
    h.cv.notify_all();
  });
  sender.join();
  receiver.join();
  return samples;
}

double MeasureMemoryBandwidth(const std::vector<int32_t>& cores) {
  constexpr size_t kBytes = size_t{32} << 20;  // far beyond the caches
  double best_us = std::numeric_limits<double>::infinity();
  std::thread thread([&] {
    PinThisThread(cores);
    std::vector<char> a(kBytes, 1), b(kBytes, 2);
    for (int r = 0; r < 4; ++r) {
      const auto start = Clock::now();
      std::memcpy(b.data(), a.data(), kBytes);
      KeepWritten(b.data());
      best_us = std::min(best_us, std::chrono::duration<double, std::micro>(Clock::now() - start).count());
      a[r] = b[kBytes - 1 - r];  // keeps the copies from being folded away
    }
  });
  thread.join();
  return 2.0 * static_cast<double>(kBytes) / (best_us * 1e-6);
}

}  // namespace devplace
