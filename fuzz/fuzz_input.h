// The fuzzed bytes as a file: devplace's readers take paths (and the size
// and depth checks live on that path), so each target hands them an
// in-memory file, /proc/self/fd/N of a memfd, rewritten for every input.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace devplace::fuzz {

inline const std::string& InputPath(const uint8_t* data, size_t size) {
  static const int fd = ::memfd_create("devplace-fuzz-input", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  return path;
}

}  // namespace devplace::fuzz
