#include "exec/host_allocator.h"

#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace devplace {

void KeepFreedHostMemory() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] {
    // 32 MiB is glibc's largest mmap threshold on 64-bit; fixing it also
    // stops glibc from moving it on its own.
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    // Never hand the heap's free top back to the system, and grow it in
    // large steps, so later steps find their pages already mapped.
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_TOP_PAD, 256 << 20);
  });
#endif
}

}  // namespace devplace
