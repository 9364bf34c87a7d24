#include "learned/files/run_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "learned/files/run_folder.h"
#include "util/error.h"

namespace devplace {
namespace {

namespace fs = std::filesystem;

// tests/sigkill_test.cc kills `place` at named moments. With
// DEVPLACE_TEST_HOLD_AT=POINT:N and DEVPLACE_TEST_HOLD_MARKER=FILE set, the
// N-th arrival at POINT creates FILE and waits there to be killed, so the
// test kills at exactly that moment by polling for FILE, with no timing.
// Points: "checkpoint-write" (half the checkpoint's bytes written to its
// temporary file), "checkpoint-rename" (written, not yet renamed),
// "curve-row" (half a curve row written), "best-written" (a new best
// placement written, no checkpoint since), "step-end" (a step done).
struct HoldSpec {
  std::string point;
  int64_t arrival = 1;
  std::string marker;
};

const HoldSpec& Hold() {
  static const HoldSpec spec = [] {
    HoldSpec s;
    const char* at = std::getenv("DEVPLACE_TEST_HOLD_AT");
    const char* marker = std::getenv("DEVPLACE_TEST_HOLD_MARKER");
    if (at == nullptr || marker == nullptr || *marker == '\0') return s;
    std::string text = at;
    const size_t colon = text.rfind(':');
    s.point = text.substr(0, colon);
    if (colon != std::string::npos) s.arrival = std::max<int64_t>(1, std::atoll(text.c_str() + colon + 1));
    s.marker = marker;
    return s;
  }();
  return spec;
}

}  // namespace

bool HoldArmed(std::string_view point) { return !Hold().marker.empty() && Hold().point == point; }

void HoldPoint(std::string_view point) {
  if (!HoldArmed(point)) return;
  static std::atomic<int64_t> arrivals{0};
  if (++arrivals != Hold().arrival) return;
  std::ofstream(Hold().marker) << point << "\n";
  // Waits to be killed; the bound only keeps a broken test from leaving a
  // process behind forever.
  for (int i = 0; i < 600; ++i) ::sleep(1);
  std::_Exit(86);
}


[[noreturn]] void FailedWrite(const std::string& path, int error) {
  throw Error(ForMessage(path) + ": cannot write: " + std::strerror(error));
}

void WriteFully(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      FailedWrite(path, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Writes `data`; with the crash test's hold armed at `point`, stops there
// half way through, as a kill in the middle of a write would.
void WriteWithHold(int fd, std::string_view data, const std::string& path, std::string_view point) {
  const size_t first = HoldArmed(point) ? data.size() / 2 : data.size();
  WriteFully(fd, data.substr(0, first), path);
  if (first == data.size()) return;
  HoldPoint(point);
  WriteFully(fd, data.substr(first), path);
}

// Replaces the checkpoint at `path` with `bytes` through a synced temporary
// file and a rename: a crash at any moment leaves the old checkpoint or the
// new one, whole.
void WriteCheckpointFile(const std::string& path, const std::string& bytes) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) FailedWrite(path, errno);
  try {
    WriteWithHold(fd, bytes, temporary, "checkpoint-write");
    if (::fsync(fd) != 0) FailedWrite(path, errno);
  } catch (...) {
    ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  ::close(fd);
  HoldPoint("checkpoint-rename");
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    FailedWrite(path, error);
  }
}

// The temporary files a run writes next to its outputs
// ("best_placement.json.tmp.<pid>", "checkpoint.pt.tmp.<pid>", ...). A
// killed run leaves them behind: the next run in the folder removes them
// all when it starts, and every run its own when it ends.
void RemoveTemporaries(const fs::path& folder, bool only_this_process) {
  RemoveTemporariesOf(folder, {run_folder::kAllFiles.begin(), run_folder::kAllFiles.end()}, only_this_process);
}

void RemoveTemporariesOf(const fs::path& folder, const std::vector<std::string>& outputs, bool only_this_process) {
  const std::string own_suffix = ".tmp." + std::to_string(::getpid());
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    for (const std::string& output : outputs) {
      const std::string stem = output + ".tmp";
      if (name.rfind(stem, 0) != 0) continue;
      if (only_this_process && name != output + own_suffix) continue;
      std::error_code ignored;
      if (entry.is_regular_file(ignored)) fs::remove(entry.path(), ignored);
    }
  }
}

std::string CheckpointBeside(const std::string& output_path) { return output_path + ".checkpoint"; }

void RemoveTemporariesBeside(const std::string& output_path, bool only_this_process) {
  fs::path folder = fs::path(output_path).parent_path();
  if (folder.empty()) folder = ".";
  const std::string name = fs::path(output_path).filename().string();
  RemoveTemporariesOf(folder, {name, CheckpointBeside(name)}, only_this_process);
}

}  // namespace devplace
