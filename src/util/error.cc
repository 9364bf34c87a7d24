#include "util/error.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <sstream>

namespace devplace {

void Require(bool condition, const std::string& message) {
  if (!condition) throw Error(message);
}

namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 if the bytes
// there are not one (overlong forms and surrogates count as invalid).
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  unsigned min_code = 0;
  unsigned code = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, min_code = 0x80, code = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, min_code = 0x800, code = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, min_code = 0x10000, code = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if (code < min_code || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
    } else if (size_t n = Utf8SequenceLength(text, i); n > 0) {
      i += n;
    } else {
      return false;
    }
  }
  return true;
}

namespace {

// `text` escaped as ForMessage says, until the output reaches `max_bytes`;
// `consumed` says how much of `text` that took.
std::string Escaped(std::string_view text, size_t max_bytes, size_t& consumed) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 16);
  size_t i = 0;
  while (i < text.size() && out.size() < max_bytes) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n", ++i;
    } else if (c == '\t') {
      out += "\\t", ++i;
    } else if (c == '\r') {
      out += "\\r", ++i;
    } else if (c == '\\') {
      out += "\\\\", ++i;
    } else if (c < 0x20 || c == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex, ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c), ++i;
    } else if (size_t n = Utf8SequenceLength(text, i); n > 0) {
      out.append(text.substr(i, n)), i += n;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex, ++i;
    }
  }
  consumed = i;
  return out;
}

}  // namespace

std::string ForMessage(std::string_view text, size_t max_bytes) {
  size_t consumed = 0;
  std::string whole = Escaped(text, max_bytes, consumed);
  if (consumed == text.size()) return whole;
  // Cut in the middle, not at the end: of a path, the end is the file's own
  // name, which a path longer than the system's limit must still show.
  const size_t half = std::max<size_t>(max_bytes / 2, 1);
  std::string head = Escaped(text, half, consumed);
  size_t tail_start = std::max(consumed, text.size() - std::min(text.size(), half));
  // Start the tail on a character, not inside a UTF-8 sequence.
  for (int back = 0; back < 3 && tail_start < text.size() && (static_cast<unsigned char>(text[tail_start]) & 0xC0) == 0x80; ++back) {
    ++tail_start;
  }
  std::string tail = Escaped(text.substr(tail_start), half, consumed);
  return head + "...(" + std::to_string(text.size()) + " bytes)..." + tail;
}

std::string ShowNumber(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

std::string ShowSeconds(double seconds) { return ShowNumber(seconds) + " s"; }

bool PrintErrorLineOnce(const std::string& line) {
  static std::mutex mutex;
  static bool printed = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (printed) return false;
  printed = true;
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  return true;
}

}  // namespace devplace
