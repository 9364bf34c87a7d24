// The small CSV files devplace writes and reads back (a run's curve.csv,
// the fidelity benchmark's samples): comma-separated cells, no quoting.
#pragma once

#include <string>
#include <vector>

namespace devplace {

// The cells of one line, split at every comma; a trailing '\r' (a file
// saved on Windows) is dropped.
std::vector<std::string> SplitCsvLine(const std::string& line);

// The whole cell as a number; false (value untouched or partial) if any of
// it is not one.
bool ParseCsvNumber(const std::string& cell, double& value);

}  // namespace devplace
