// Files in tests: a temporary folder, reading a file whole, splitting text.
// Standard library only, so that a test of any layer, or one that only runs
// the program, can use it without linking devplace's libraries.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace devplace::testing {

// A temporary folder removed when the test ends.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "devplace-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }
  std::string Write(const std::string& name, const std::string& contents) const {
    std::string path = File(name);
    std::ofstream(path) << contents;
    return path;
  }

 private:
  std::string path_;
};

// The whole file, byte for byte; empty if it cannot be read, so that a
// failure message can show whatever there is.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `text` cut at each `separator`; a trailing separator gives no empty last part.
inline std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  return parts;
}

}  // namespace devplace::testing
