// This machine's CPU cores and memory, as the executor and `clusters
// --detect` see them: the cores this process may run on, a split of them
// into disjoint sets (one per CPU device), and pinning a thread to a set.
#pragma once

#include <cstdint>
#include <vector>

namespace devplace {

// The cores this process may run on (its affinity mask), ascending. Never
// empty: if the mask cannot be read, core 0.
std::vector<int32_t> UsableCores();

// `cores` split into `parts` disjoint, contiguous sets as even as can be
// (the first ones get one more). Throws Error when there are fewer cores
// than parts: a device must own at least one core.
std::vector<std::vector<int32_t>> SplitCores(const std::vector<int32_t>& cores, int32_t parts);

// Pins the calling thread to `cores` (no-op when empty). False when the
// system refuses (a core outside the process's mask).
bool PinThisThread(const std::vector<int32_t>& cores);

// Physical memory of the machine in bytes (0 if unknown).
int64_t PhysicalMemoryBytes();

}  // namespace devplace
