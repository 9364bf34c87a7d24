#include "util/str_format.h"

#include <cstdarg>
#include <cstdio>

namespace devplace {

std::string StrFormat(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string text;
  if (length > 0) {
    text.resize(static_cast<size_t>(length));
    std::vsnprintf(text.data(), text.size() + 1, format, again);  // writes the terminator into size()'s slot
  }
  va_end(again);
  return text;
}

}  // namespace devplace
