#include "util/csv.h"

#include <charconv>

namespace devplace {

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> cells;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    cells.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (!cells.empty() && !cells.back().empty() && cells.back().back() == '\r') cells.back().pop_back();
  return cells;
}

bool ParseCsvNumber(const std::string& cell, double& value) {
  const char* end = cell.data() + cell.size();
  auto [ptr, ec] = std::from_chars(cell.data(), end, value);
  return ec == std::errc() && ptr == end;
}

}  // namespace devplace
