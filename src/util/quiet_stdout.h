// Keeps a third-party library's printf off devplace's standard output.
//
// METIS prints warnings ("***Cannot bisect a graph with 0 vertices!") to
// stdout when asked for many parts of a small graph; that corrupted
// `devplace compare --json` and split table rows. While a QuietStdout
// lives, file descriptor 1 goes to /dev/null; it is restored (after a
// flush, so nothing of devplace's own is lost or dropped) when it ends.
// Process-wide: use it only where no other thread writes to stdout (the
// placers run on the caller's thread). Best effort: if the descriptor
// cannot be redirected, output goes where it went.
#pragma once

namespace devplace {

class QuietStdout {
 public:
  QuietStdout();
  ~QuietStdout();
  QuietStdout(const QuietStdout&) = delete;
  QuietStdout& operator=(const QuietStdout&) = delete;

 private:
  int saved_fd_ = -1;  // stdout's descriptor, duplicated; -1 if not redirected
};

}  // namespace devplace
