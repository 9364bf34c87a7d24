// The files of a learned placer's run, written so that a crash at any moment
// loses nothing already found: whole writes, atomic checkpoint replacement,
// cleanup of temporaries a killed run left, and the crash test's hold points
// (tests/sigkill_test.cc). No torch here.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace devplace {

// With DEVPLACE_TEST_HOLD_AT=POINT:N and DEVPLACE_TEST_HOLD_MARKER=FILE set,
// the N-th arrival at POINT creates FILE and waits there to be killed.
// Points: "checkpoint-write" (half the checkpoint's bytes written to its
// temporary file), "checkpoint-rename" (written, not yet renamed),
// "curve-row" (half a curve row written), "best-written" (a new best
// placement written, no checkpoint since), "step-end" (a step done).
bool HoldArmed(std::string_view point);
void HoldPoint(std::string_view point);

[[noreturn]] void FailedWrite(const std::string& path, int error);
void WriteFully(int fd, std::string_view data, const std::string& path);

// Writes `data`; with the crash test's hold armed at `point`, stops there
// half way through, as a kill in the middle of a write would.
void WriteWithHold(int fd, std::string_view data, const std::string& path, std::string_view point);

// Replaces the checkpoint at `path` with `bytes` through a synced temporary
// file and a rename: a crash at any moment leaves the old checkpoint or the
// new one, whole.
void WriteCheckpointFile(const std::string& path, const std::string& bytes);

// The temporary files a run writes next to its outputs
// ("best_placement.json.tmp.<pid>", "checkpoint.pt.tmp.<pid>", ...). A
// killed run leaves them behind: the next run in the folder removes them
// all when it starts, and every run its own when it ends.
void RemoveTemporaries(const std::filesystem::path& folder, bool only_this_process);
// The same for the files named `outputs` in `folder` (`devplace train`'s
// policy file and its checkpoint).
void RemoveTemporariesOf(const std::filesystem::path& folder, const std::vector<std::string>& outputs, bool only_this_process);

// A file a command writes whole at checkpoints (`train`'s policy file,
// `pretrain`'s encoder file) keeps its training checkpoint beside it, named
// after it; RemoveTemporariesBeside cleans the temporaries of both.
std::string CheckpointBeside(const std::string& output_path);
void RemoveTemporariesBeside(const std::string& output_path, bool only_this_process);

}  // namespace devplace
