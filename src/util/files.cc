#include "util/files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "util/error.h"

namespace devplace {

std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw Error(path + ": read failed");
  return buffer.str();
}

nlohmann::json ReadJsonFile(const std::string& path) {
  std::string text = ReadTextFile(path);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw Error(path + ": file is empty, expected JSON");
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() is long and repeats the exception id; the byte offset is what
    // a person needs to find the mistake.
    throw Error(path + ": not valid JSON (syntax error at byte " + std::to_string(e.byte) + ")");
  }
}

void WriteFileAtomically(const std::string& path, const std::string& contents) {
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(path + ": cannot write: " + std::strerror(errno));
    out << contents;
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      throw Error(path + ": write failed");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    int saved = errno;
    std::remove(temporary.c_str());
    throw Error(path + ": cannot replace: " + std::strerror(saved));
  }
}

}  // namespace devplace
