#include "exec/host_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace devplace {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitizedMalloc = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitizedMalloc = true;
#else
constexpr bool kSanitizedMalloc = false;
#endif
#else
constexpr bool kSanitizedMalloc = false;
#endif

// torch's alignment for CPU tensors (c10's gAlignment); also the size of
// the header in front of each block, which holds the block's size.
constexpr size_t kAlignment = 64;
// Smaller blocks are glibc's tcache and bins' business: less than a page
// each, they cost few faults.
constexpr size_t kMinCachedBytes = size_t{4} << 10;
// Past this much held, freed blocks go back to malloc: a bound for a
// process that runs many graphs.
constexpr size_t kMaxCachedBytes = size_t{4} << 30;

// Freed blocks by size (header included), guarded by one mutex: its
// critical section is a vector push or pop, against a kernel's
// microseconds.
class BlockCache {
 public:
  void* Take(size_t size) {
    {
      std::lock_guard lock(mu_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* block = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= size;
        ++reused_;
        return block;
      }
    }
    return std::aligned_alloc(kAlignment, size);
  }

  void Give(void* block, size_t size) {
    if (size >= kMinCachedBytes) {
      std::lock_guard lock(mu_);
      if (cached_bytes_ + size <= kMaxCachedBytes) {
        free_[size].push_back(block);
        cached_bytes_ += size;
        return;
      }
    }
    std::free(block);
  }

  HostCacheStats stats() {
    std::lock_guard lock(mu_);
    return {static_cast<int64_t>(cached_bytes_), reused_};
  }

 private:
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
  int64_t reused_ = 0;
};

BlockCache& Cache() {
  static BlockCache* cache = new BlockCache;  // never destroyed: tensors may outlive main
  return *cache;
}

// The deleter of a tensor's data: the block starts a header before it.
// The data pointer is the context too, as raw_allocate's callers (oneDNN's
// scratch buffers) need.
void ReleaseData(void* data) {
  if (data == nullptr) return;
  void* block = static_cast<char*>(data) - kAlignment;
  size_t size;
  std::memcpy(&size, block, sizeof size);
  Cache().Give(block, size);
}

class CachingHostAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) const override {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (bytes == 0) return {nullptr, nullptr, &ReleaseData, cpu};
    if (bytes > SIZE_MAX - 2 * kAlignment) throw std::bad_alloc();
    const size_t size = kAlignment + (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* block = Cache().Take(size);
    if (block == nullptr) throw std::bad_alloc();
    std::memcpy(block, &size, sizeof size);
    void* data = static_cast<char*>(block) + kAlignment;
    return {data, data, &ReleaseData, cpu};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &ReleaseData; }
};

}  // namespace

void KeepFreedHostMemory() {
  static std::once_flag once;
  std::call_once(once, [] {
#if defined(__GLIBC__)
    // 32 MiB is glibc's largest mmap threshold on 64-bit; fixing it also
    // stops glibc from moving it on its own.
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    // Never hand the heap's free top back to the system, and grow it in
    // large steps, so later steps find their pages already mapped.
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_TOP_PAD, 256 << 20);
#endif
    if (!kSanitizedMalloc) {
      static CachingHostAllocator* allocator = new CachingHostAllocator;
      // Above the default allocator's priority (0), so that torch's CPU
      // tensors come from here.
      c10::SetCPUAllocator(allocator, /*priority=*/1);
    }
  });
}

HostCacheStats HostCache() { return Cache().stats(); }

bool MallocIsSanitized() { return kSanitizedMalloc; }

}  // namespace devplace
