// The one exception type devplace throws for bad input: a file, a flag, a
// spec. Its message is a complete sentence fragment naming the input and the
// problem, ready to print after "devplace: error: ".
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace devplace {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws Error(message) when `condition` is false. For input validation at
// boundaries; internal invariants use assert.
void Require(bool condition, const std::string& message);

// Whether `text` is well-formed UTF-8 (what JSON strings must be, and what
// nlohmann's dump() insists on).
bool IsValidUtf8(std::string_view text);

// A number as people write it in a message ("0.001", "1e+09", "nan").
std::string ShowNumber(double value);
// A duration in a message: "30 s", "0.5 s".
std::string ShowSeconds(double seconds);

// Prints `line` (newline included) to stderr unless this process printed
// its error line already, and says whether it did: a process prints one
// error line, whichever thread gets there first (the command's own catch,
// or a terminate handler for an exception out of a library's thread). The
// line is printed whole before another thread may look.
bool PrintErrorLineOnce(const std::string& line);

// A name or value taken from the input, made safe to put in a one-line
// message: control characters, backslashes and bytes that are not UTF-8 are
// escaped (\n, \t, \xNN), and anything longer than `max_bytes` keeps its start and end
// with "...(N bytes)..." between: a hostile 8 MiB name with newlines in it still gives one
// short line, and a path past the system's limit still shows the file's name. Use it for
// every user-supplied name or path echoed in an Error.
std::string ForMessage(std::string_view text, size_t max_bytes = 160);

}  // namespace devplace
