#include "util/quiet_stdout.h"

#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

namespace devplace {

QuietStdout::QuietStdout() {
  std::fflush(stdout);  // what devplace wrote so far goes out first
  const int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null_fd < 0) return;
  saved_fd_ = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
  if (saved_fd_ >= 0 && dup2(null_fd, STDOUT_FILENO) < 0) {
    close(saved_fd_);
    saved_fd_ = -1;
  }
  close(null_fd);
}

QuietStdout::~QuietStdout() {
  if (saved_fd_ < 0) return;
  std::fflush(stdout);  // the library's buffered text goes to /dev/null, not after us
  dup2(saved_fd_, STDOUT_FILENO);
  close(saved_fd_);
}

}  // namespace devplace
