// Stopping a long search early, with what it found kept. A user's Ctrl-C
// (SIGINT) or a scheduler's SIGTERM used to kill `place --method mcmc`
// before it wrote its best placement; now the commands that search install
// StopOnSignals, their loops poll StopRequested where they check their
// budget and end as if it ran out, and the command writes its results as
// usual. A second signal ends the process at once (the default action).
#pragma once

namespace devplace {

// Installs the SIGINT and SIGTERM handlers; each fires once.
void StopOnSignals();

// Whether a stop was asked for: cheap (one atomic load), safe to poll often.
bool StopRequested();

// The signal that asked for the stop, or 0.
int StopSignal();

// For tests: ask for a stop as the signal would, or forget one.
void RequestStop(int signal);
void ClearStopRequest();

}  // namespace devplace
