// Reading inputs and writing outputs safely: whole-file reads with clear
// errors, JSON parsing that names the file, and atomic writes (temporary
// file, then rename) so that a failed run never leaves half a file behind.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace devplace {

std::string ReadTextFile(const std::string& path);

// Parses `path` as JSON; a syntax error names the file and the byte offset.
nlohmann::json ReadJsonFile(const std::string& path);

// Writes `contents` to `path` through a temporary file in the same folder and
// a rename, so readers see either the old file or the complete new one.
void WriteFileAtomically(const std::string& path, const std::string& contents);

}  // namespace devplace
