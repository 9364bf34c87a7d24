#include "util/stop_request.h"

#include <semaphore.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace devplace {

namespace {

// Lock-free, so that the handler may write it (async-signal-safe).
std::atomic<int> stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

std::atomic<bool> search_ended{false};

// The handler wakes the watchdog with sem_post, which is async-signal-safe
// (a condition variable is not).
sem_t watchdog_wake;
std::atomic<bool> watchdog_started{false};

// The signals whose handler StopOnSignals installed (not those ignored at
// start), written before the handler can run.
constexpr int kStopSignals[] = {SIGINT, SIGTERM};
bool installed[2] = {false, false};

void WriteToStderr(const char* message, size_t length) {
  // write(2) is async-signal-safe; stdio is not (nor safe to use while the
  // main thread may hold its lock).
  [[maybe_unused]] ssize_t written = write(STDERR_FILENO, message, length);
}

extern "C" void OnStopSignal(int signal) {
  const int saved_errno = errno;
  stop_signal.store(signal, std::memory_order_relaxed);
  // Any second signal, of either kind, takes the default action (sigaction
  // is async-signal-safe): SIGINT then SIGTERM must quit too.
  struct sigaction default_action;
  std::memset(&default_action, 0, sizeof default_action);
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int k = 0; k < 2; ++k) {
    if (installed[k]) sigaction(kStopSignals[k], &default_action, nullptr);
  }
  const char message[] =
      "devplace: stopping early: dropping the current step and writing what was found (signal again to quit now)\n";
  WriteToStderr(message, sizeof message - 1);
  if (watchdog_started.load(std::memory_order_relaxed)) sem_post(&watchdog_wake);
  errno = saved_errno;
}

// The backstop for work that cannot poll StopRequested (a library call):
// woken by the signal, it gives the command kStopGraceSeconds to end its
// search, then ends the process unless the command said it is writing its
// results. What the run keeps on disk is whole at any instant (written to a
// temporary file and renamed, or appended a row at a time), so ending here
// loses only the search's last unfinished stretch.
void Watchdog() {
  while (sem_wait(&watchdog_wake) != 0) {
    if (errno != EINTR) return;
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(kStopGraceSeconds));
  if (search_ended.load()) return;
  const char message[] =
      "devplace: the search did not stop in time (inside a call that cannot be interrupted); quitting now with what "
      "was written so far\n";
  WriteToStderr(message, sizeof message - 1);
  _exit(128 + stop_signal.load());
}

struct TestPoint {
  std::string point;  // empty: no test point armed
  int64_t arrival = 1;
  bool stuck = false;
};

const TestPoint& ArmedTestPoint() {
  static const TestPoint armed = [] {
    TestPoint t;
    const char* at = std::getenv("DEVPLACE_TEST_STOP_AT");
    if (at == nullptr || *at == '\0') return t;
    std::string text = at;
    if (const std::string stuck = ":stuck"; text.size() > stuck.size() && text.ends_with(stuck)) {
      t.stuck = true;
      text.resize(text.size() - stuck.size());
    }
    const size_t colon = text.rfind(':');
    t.point = text.substr(0, colon);
    if (colon != std::string::npos) t.arrival = std::max<int64_t>(1, std::atoll(text.c_str() + colon + 1));
    return t;
  }();
  return armed;
}

// Waits about `seconds` or until `done` says so; the bound only keeps a
// broken test from leaving a process behind.
template <typename Done>
void WaitUpTo(double seconds, Done done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void StartWatchdog() {
  if (watchdog_started.load()) return;
  if (sem_init(&watchdog_wake, 0, 0) != 0) return;  // no backstop, the cooperative stop still works
  std::thread(Watchdog).detach();
  watchdog_started.store(true);
}

}  // namespace

void StopOnSignals() {
  StartWatchdog();
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  // Once: the handler gives way to the default action (for both signals,
  // in the handler), so a second signal ends a process that does not stop
  // soon enough.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  for (int k = 0; k < 2; ++k) {
    // A signal ignored at start stays ignored: a job started in the
    // background by a script (SIGINT ignored) must not stop on the
    // terminal's Ctrl-C.
    struct sigaction before;
    if (sigaction(kStopSignals[k], nullptr, &before) == 0 && before.sa_handler == SIG_IGN) continue;
    installed[k] = true;
    sigaction(kStopSignals[k], &action, nullptr);
  }
}

bool StopRequested() { return stop_signal.load(std::memory_order_relaxed) != 0; }

int StopSignal() { return stop_signal.load(std::memory_order_relaxed); }

void ThrowIfStopRequested() {
  if (StopRequested()) throw Stopped();
}

void SearchEnded() { search_ended.store(true); }

void StopTestPoint(std::string_view point) {
  const TestPoint& armed = ArmedTestPoint();
  if (armed.point.empty() || armed.point != point) return;
  static std::atomic<int64_t> arrivals{0};
  if (++arrivals != armed.arrival) return;
  const std::string line = "devplace: test point " + std::string(point) + "\n";
  WriteToStderr(line.data(), line.size());
  WaitUpTo(600, [] { return StopRequested(); });
  if (!StopRequested()) std::_Exit(86);
  if (armed.stuck) {
    WaitUpTo(600, [] { return false; });
    std::_Exit(86);
  }
}

void RequestStop(int signal) { stop_signal.store(signal, std::memory_order_relaxed); }

void ClearStopRequest() { stop_signal.store(0, std::memory_order_relaxed); }

}  // namespace devplace
