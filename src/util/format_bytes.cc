#include "util/format_bytes.h"

#include <cstdio>

namespace devplace {

std::string FormatBytes(int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.2f %s", value, kUnits[unit]);
  return text;
}

}  // namespace devplace
