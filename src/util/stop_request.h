// Stopping a long search early, with what it found kept. A user's Ctrl-C
// (SIGINT) or a scheduler's SIGTERM used to kill `place --method mcmc`
// before it wrote its best placement; now the commands that search install
// StopOnSignals, their loops poll StopRequested where they check their
// budget and end as if it ran out, and the command writes its results as
// usual. A second signal ends the process at once (the default action).
//
// A check between steps is not enough when one step takes minutes (the
// 2017 placer samples 5,000 groups one after another; a list scheduler
// scans a million ops): the long loops inside a step poll too, and throw
// Stopped, which drops the partial step (no update from a partial batch)
// and lets the caller end as on a budget stop. A library call that cannot
// poll (Scotch, METIS) is covered by a backstop: once a stop is asked, a
// watchdog ends the process kStopGraceSeconds later unless the command has
// said, with SearchEnded, that it is past its search and writing what it
// found. Nothing the run keeps is lost that way: the best placement is
// written (atomically) whenever it improves, curve rows are appended whole,
// a checkpoint is replaced in one rename.
#pragma once

#include <exception>
#include <string_view>

namespace devplace {

// Installs the SIGINT and SIGTERM handlers (each fires once) and the
// watchdog that backs them up.
void StopOnSignals();

// Whether a stop was asked for: cheap (one atomic load), safe to poll often.
bool StopRequested();

// The signal that asked for the stop, or 0.
int StopSignal();

// Thrown by ThrowIfStopRequested: the work in progress is abandoned.
class Stopped : public std::exception {
 public:
  const char* what() const noexcept override { return "stopped early by a signal"; }
};

// For the loops inside one step of a search: throws Stopped once a stop was
// asked for.
void ThrowIfStopRequested();

// Seconds a command has, after the signal, to end its search before the
// watchdog ends the process (with the exit code 128 + signal).
inline constexpr double kStopGraceSeconds = 1.5;

// Says the search is over and the command is writing its results (a final
// checkpoint, the results file, the table): from here the watchdog lets the
// process end by itself, however long that takes. One way.
void SearchEnded();

// For tests (tests/stop_signal_test.cc): with DEVPLACE_TEST_STOP_AT=POINT:N
// set, the N-th arrival at POINT prints "devplace: test point POINT" to
// stderr and waits for the stop, so that a test's signal lands exactly
// there, with no timing; with POINT:N:stuck it goes on waiting after the
// stop, as a library call that cannot poll would, for the watchdog. Unset,
// it costs a load of a flag. Points: "sample" (half way through sampling a
// decision), "measure" (before a placement of a batch is measured),
// "list-schedule" (half way through a list scheduler's scan), "chain-move"
// (before a search's chain evaluates a move: mcmc, guided).
void StopTestPoint(std::string_view point);

// For tests: ask for a stop as the signal would, or forget one.
void RequestStop(int signal);
void ClearStopRequest();

}  // namespace devplace
