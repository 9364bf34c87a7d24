#include "util/stop_request.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

namespace devplace {

namespace {

// Lock-free, so that the handler may write it (async-signal-safe).
std::atomic<int> stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void OnStopSignal(int signal) {
  stop_signal.store(signal, std::memory_order_relaxed);
  // write(2) is async-signal-safe; stdio is not.
  const char message[] =
      "devplace: stopping early: finishing the current step and writing what was found (signal again to quit now)\n";
  [[maybe_unused]] ssize_t written = write(STDERR_FILENO, message, sizeof message - 1);
}

}  // namespace

void StopOnSignals() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  // Once: the handler gives way to the default action, so a second signal
  // ends a process that does not stop soon enough.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  for (int signal : {SIGINT, SIGTERM}) {
    // A signal ignored at start stays ignored: a job started in the
    // background by a script (SIGINT ignored) must not stop on the
    // terminal's Ctrl-C.
    struct sigaction before;
    if (sigaction(signal, nullptr, &before) == 0 && before.sa_handler == SIG_IGN) continue;
    sigaction(signal, &action, nullptr);
  }
}

bool StopRequested() { return stop_signal.load(std::memory_order_relaxed) != 0; }

int StopSignal() { return stop_signal.load(std::memory_order_relaxed); }

void RequestStop(int signal) { stop_signal.store(signal, std::memory_order_relaxed); }

void ClearStopRequest() { stop_signal.store(0, std::memory_order_relaxed); }

}  // namespace devplace
