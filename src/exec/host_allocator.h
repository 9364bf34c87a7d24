// How host (CPU) memory is handed out while steps run.
//
// A step allocates every tensor afresh and frees it when its last reader is
// done. With glibc's defaults, large blocks come from mmap and go back to the
// system when freed, and the heap's top is trimmed, so every step faults its
// pages in again and the kernel zeroes them: on this project's VM that was
// some 70 % of a small RNNLM's step, and it varied 2x from run to run
// (BENCHMARKS.md, "Fidelity"). Frameworks do not pay it: TensorFlow's BFC
// allocator and PyTorch's caching allocator keep what a step freed for the
// next one. So does the executor.
//
// glibc's own settings were not enough: each step's threads take their
// memory from per-thread arenas, whose heaps are unmapped when they empty
// and which a new thread may not get back, so steps 2 to 4 of a fresh
// process still faulted 6,000 to 35,000 pages, at random (docs/executor.md,
// "Measuring"). Torch's CPU tensors therefore come from a cache of freed
// blocks by size, in front of malloc, that never hands a block back.
#pragma once

#include <cstdint>

namespace devplace {

// Once per process: blocks up to 32 MiB come from the heap (not mmap),
// freed memory stays with the process (no trimming), and torch's CPU
// allocator keeps freed blocks of 4 KiB or more for reuse by size (up to
// 4 GiB of them; not under AddressSanitizer, whose checks need every free).
// Safe to call many times; glibc's part is a no-op elsewhere.
void KeepFreedHostMemory();

// Whether AddressSanitizer replaces malloc in this build: then glibc's
// settings do nothing and the cache is off.
bool MallocIsSanitized();

// The torch CPU allocator's cache: bytes of freed blocks held for reuse, and
// allocations served from it so far.
struct HostCacheStats {
  int64_t cached_bytes = 0;
  int64_t reused = 0;
};
HostCacheStats HostCache();

}  // namespace devplace
