#include "exec/host_allocator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace devplace {
namespace {

// A step's tensors of a few MiB each, freed, must stay with the process:
// from the heap, not mmap, and the heap not trimmed after the frees, so the
// next step does not fault its pages in again.
TEST(HostAllocatorTest, FreedTensorSizedBlocksStayInTheHeap) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "not glibc";
#else
  if (MallocIsSanitized()) GTEST_SKIP() << "the sanitizer's malloc replaces glibc's";
  KeepFreedHostMemory();
  KeepFreedHostMemory();  // a second call changes nothing
  const struct mallinfo2 before = mallinfo2();
  constexpr size_t kBlockBytes = 4 << 20;  // above glibc's default mmap threshold
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(std::malloc(kBlockBytes));
  const struct mallinfo2 held = mallinfo2();
  for (void* b : blocks) std::free(b);
  const struct mallinfo2 after = mallinfo2();
  EXPECT_EQ(held.hblkhd, before.hblkhd) << "tensor-sized blocks came from mmap";
  // Against the heap while the blocks were held, not before them: earlier
  // tests in this process may have left free heap enough for all eight.
  EXPECT_GE(after.arena, held.arena) << "the heap was trimmed after the frees";
  EXPECT_GE(after.fordblks, 8 * kBlockBytes) << "the freed blocks were not kept for reuse";
#endif
}

// A freed tensor's block goes back to the executor's cache and the next
// tensor of its size gets it, pages already touched: a step then faults
// nothing in that the step before had.
TEST(HostAllocatorTest, AFreedTensorsBlockIsReusedBySize) {
  if (MallocIsSanitized()) GTEST_SKIP() << "the cache is off under the sanitizer";
  KeepFreedHostMemory();
  const HostCacheStats before = HostCache();
  // A size no other test uses, so that the cache holds none of it yet.
  const int64_t elements = (int64_t{3} << 20) / 4 + 7;
  const void* first = nullptr;
  {
    at::Tensor t = at::empty({elements}, at::kFloat);
    first = t.data_ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u) << "torch's alignment";
  }
  EXPECT_GE(HostCache().cached_bytes, before.cached_bytes + elements * 4) << "the freed block was not kept";
  at::Tensor again = at::empty({elements}, at::kFloat);
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_EQ(HostCache().reused, before.reused + 1);
}

}  // namespace
}  // namespace devplace
