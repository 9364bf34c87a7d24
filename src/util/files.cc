#include "util/files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"

namespace devplace {
namespace {

// Closes a file descriptor when it goes out of scope.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { ::close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

std::string TooLarge(const std::string& path, int64_t max_bytes) {
  return ForMessage(path) + ": larger than " + std::to_string(max_bytes) +
         " bytes, the most devplace reads from one file";
}

// The byte offset of the first bracket nested deeper than kMaxJsonDepth, or
// npos. Brackets inside strings do not count; a malformed text is left for
// the parser to report.
size_t FindTooDeepNesting(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

// nlohmann's what() starts with "[json.exception.NAME.ID] "; the rest says
// what was wrong, and may quote the input, so it goes through ForMessage.
std::string Explain(const nlohmann::json::exception& e) {
  std::string_view what = e.what();
  if (size_t end = what.find("] "); what.rfind("[json.exception.", 0) == 0 && end != std::string_view::npos) {
    what.remove_prefix(end + 2);
  }
  return ForMessage(what);
}

}  // namespace

std::string ReadTextFile(const std::string& path, int64_t max_bytes) {
  // O_NONBLOCK so that opening a FIFO with no writer does not wait forever;
  // reads block as usual once it is cleared.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(ForMessage(path) + ": cannot open: " + std::strerror(errno));
  FdCloser closer(fd);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);

  std::string text;
  struct stat info {};
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) {
    if (info.st_size > max_bytes) throw Error(TooLarge(path, max_bytes));
    text.reserve(static_cast<size_t>(info.st_size));
  }
  // Chunked reads work for pipes and devices, whose size is unknown.
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ForMessage(path) + ": cannot read: " + std::strerror(errno));
    }
    if (n == 0) break;
    if (static_cast<int64_t>(text.size()) + n > max_bytes) throw Error(TooLarge(path, max_bytes));
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

void CheckJsonNesting(std::string_view text, const std::string& source) {
  if (size_t at = FindTooDeepNesting(text); at != std::string_view::npos) {
    throw Error(ForMessage(source) + ": JSON nested more than " + std::to_string(kMaxJsonDepth) +
                " levels deep (at byte " + std::to_string(at) + ")");
  }
}

std::string JsonParseErrorMessage(const nlohmann::json::exception& e, const std::string& source) {
  // e.what() is long and repeats the exception id; the byte offset is what
  // a person needs to find the mistake.
  if (const auto* syntax = dynamic_cast<const nlohmann::json::parse_error*>(&e)) {
    return ForMessage(source) + ": not valid JSON (syntax error at byte " + std::to_string(syntax->byte) + ")";
  }
  // A number outside double range (1e400) is out_of_range, not a parse_error.
  return ForMessage(source) + ": not usable JSON: " + Explain(e);
}

void RepeatedKeyFinder::StartObject() {
  if (depth_ == keys_.size()) keys_.emplace_back();
  keys_[depth_++].clear();
}

void RepeatedKeyFinder::EndObject() {
  if (depth_ > 0) --depth_;
}

bool RepeatedKeyFinder::Key(const std::string& key) {
  if (depth_ == 0 || keys_[depth_ - 1].insert(key).second) return true;
  if (!found_) {
    found_ = true;
    first_ = key;
  }
  return false;
}

std::string RepeatedKeyMessage(const std::string& key, const std::string& source) {
  return ForMessage(source) + ": key '" + ForMessage(key, 200) +
         "' appears twice in one object; JSON does not say which value counts (keep one)";
}

nlohmann::json ParseJson(std::string_view text, const std::string& source) {
  CheckJsonNesting(text, source);
  RepeatedKeyFinder repeated;
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text, [&repeated](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      using Event = nlohmann::json::parse_event_t;
      if (event == Event::object_start) repeated.StartObject();
      if (event == Event::object_end) repeated.EndObject();
      if (event == Event::key) repeated.Key(parsed.get_ref<const std::string&>());
      return true;
    });
  } catch (const nlohmann::json::exception& e) {
    throw Error(JsonParseErrorMessage(e, source));
  }
  if (repeated.found()) throw Error(RepeatedKeyMessage(repeated.first(), source));
  return document;
}

std::string ReadJsonText(const std::string& path) {
  std::string text = ReadTextFile(path);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw Error(ForMessage(path) + ": file is empty, expected JSON");
  }
  return text;
}

nlohmann::json ReadJsonFile(const std::string& path) { return ParseJson(ReadJsonText(path), path); }

void WriteFileAtomically(const std::string& path, const std::string& contents) {
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ForMessage(path) + ": cannot write: " + std::strerror(errno));
    out << contents;
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      throw Error(ForMessage(path) + ": write failed");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    int saved = errno;
    std::remove(temporary.c_str());
    throw Error(ForMessage(path) + ": cannot replace: " + std::strerror(saved));
  }
}

void CheckWritable(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) throw Error(ForMessage(path) + ": cannot write: it is a folder");
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ForMessage(path) + ": cannot write: " + std::strerror(errno));
  }
  std::remove(temporary.c_str());
}

}  // namespace devplace
