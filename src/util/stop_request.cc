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

// The signals whose handler StopOnSignals installed (not those ignored at
// start), written before the handler can run.
constexpr int kStopSignals[] = {SIGINT, SIGTERM};
bool installed[2] = {false, false};

extern "C" void OnStopSignal(int signal) {
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

void RequestStop(int signal) { stop_signal.store(signal, std::memory_order_relaxed); }

void ClearStopRequest() { stop_signal.store(0, std::memory_order_relaxed); }

}  // namespace devplace
