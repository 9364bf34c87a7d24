// printf into a std::string of whatever length the text needs. A fixed
// buffer cut a compare row on a 64-device cluster, newline and all, so the
// next row ran on into it: output with names and per-device lists (which
// have no fixed width) is formatted here.
#pragma once

#include <string>

namespace devplace {

[[gnu::format(printf, 1, 2)]] std::string StrFormat(const char* format, ...);

}  // namespace devplace
