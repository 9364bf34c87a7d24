#include "exec/distributed/kill_point.h"

#include <csignal>
#include <cstdlib>
#include <string>

namespace devplace {

void KillPointForTests(const char* variable, int32_t rank, int64_t count) {
  const char* spec = std::getenv(variable);
  if (!spec) return;
  const std::string text = spec;
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return;
  if (std::atoi(text.substr(0, colon).c_str()) == rank && std::atoll(text.substr(colon + 1).c_str()) == count) {
    std::raise(SIGKILL);
  }
}

}  // namespace devplace
