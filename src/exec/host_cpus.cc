#include "exec/host_cpus.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <string>

#include "cluster/cluster.h"
#include "util/error.h"

namespace devplace {

std::vector<int32_t> UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int32_t> cores;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int32_t core = 0; core < kMaxCores && core < CPU_SETSIZE; ++core) {
      if (CPU_ISSET(core, &set)) cores.push_back(core);
    }
  }
  if (cores.empty()) cores.push_back(0);
  return cores;
}

std::vector<std::vector<int32_t>> SplitCores(const std::vector<int32_t>& cores, int32_t parts) {
  const int32_t n = static_cast<int32_t>(cores.size());
  if (parts < 1 || parts > n) {
    throw Error(std::to_string(parts) + " CPU devices asked for, but this process may use " + std::to_string(n) +
                " core" + (n == 1 ? "" : "s") + " (each device owns at least one)");
  }
  std::vector<std::vector<int32_t>> sets(parts);
  int32_t next = 0;
  for (int32_t p = 0; p < parts; ++p) {
    const int32_t size = n / parts + (p < n % parts ? 1 : 0);
    sets[p].assign(cores.begin() + next, cores.begin() + next + size);
    next += size;
  }
  return sets;
}

bool PinThisThread(const std::vector<int32_t>& cores) {
  if (cores.empty()) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int32_t core : cores) {
    if (core < 0 || core >= CPU_SETSIZE) return false;
    CPU_SET(core, &set);
  }
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_bytes = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_bytes <= 0) return 0;
  return static_cast<int64_t>(pages) * page_bytes;
}

}  // namespace devplace
