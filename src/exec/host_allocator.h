// How host (CPU) memory is handed out while steps run.
//
// A step allocates every tensor afresh and frees it when its last reader is
// done. With glibc's defaults, large blocks come from mmap and go back to the
// system when freed, and the heap's top is trimmed, so every step faults its
// pages in again and the kernel zeroes them: on this project's VM that was
// some 70 % of a small RNNLM's step, and it varied 2x from run to run
// (BENCHMARKS.md, "Fidelity"). Frameworks do not pay it: TensorFlow's BFC
// allocator and PyTorch's caching allocator keep what a step freed for the
// next one. The executor asks glibc to do the same.
#pragma once

namespace devplace {

// Once per process: blocks up to 32 MiB come from the heap (not mmap), and
// freed memory stays with the process (no trimming), so a step reuses the
// pages of the step before. Safe to call many times; a no-op where the C
// library is not glibc.
void KeepFreedHostMemory();

}  // namespace devplace
