// Reading inputs and writing outputs safely: whole-file reads with clear
// errors and a size limit, JSON parsing that names the file and bounds the
// nesting depth, and atomic writes (temporary file, then rename) so that a
// failed run never leaves half a file behind.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace devplace {

// The most devplace reads from one input file: 1 GiB. Above the largest
// graphs devplace generates itself (10^6 synthetic ops, about 430 MB; NMT
// at its cell bound, about 650 MB), and a bound on memory for inputs that
// never end (--graph /dev/zero).
inline constexpr int64_t kMaxInputFileBytes = int64_t{1} << 30;

// The deepest nesting of arrays and objects a JSON input may have. devplace's
// formats need 6; the bound keeps nlohmann's recursive code (dump, compare)
// from overflowing the stack on hostile input.
inline constexpr int kMaxJsonDepth = 64;

// Reads the whole file, which may be a pipe or device: stops with an Error
// naming the file once more than `max_bytes` arrive.
std::string ReadTextFile(const std::string& path, int64_t max_bytes = kMaxInputFileBytes);

// Parses `text` as JSON. Every problem — a syntax error (with its byte
// offset), nesting deeper than kMaxJsonDepth, a number outside double range,
// a key repeated in one object — is an Error naming `source` (a file path,
// or what the text came from).
nlohmann::json ParseJson(std::string_view text, const std::string& source);

// ReadTextFile then ParseJson; an empty file is an Error too.
nlohmann::json ReadJsonFile(const std::string& path);

// ReadTextFile and ReadJsonFile's check that the file is not empty: the text
// for a streaming parse (util/json_stream.h).
std::string ReadJsonText(const std::string& path);

// The checks and errors ParseJson and the streaming parse share: an Error
// naming `source` when `text` nests deeper than kMaxJsonDepth, and the
// message for an error nlohmann reports while parsing.
void CheckJsonNesting(std::string_view text, const std::string& source);
std::string JsonParseErrorMessage(const nlohmann::json::exception& e, const std::string& source);

// A key given twice in one object: JSON leaves open which value counts, and
// nlohmann keeps the last, so a cluster file saying "memory_gib": 64 and
// later "memory_gib": 1 was read as 1 GiB without a word. Both parses
// refuse such a document, naming the first key repeated (after any syntax
// error, which is reported first).
class RepeatedKeyFinder {
 public:
  void StartObject();
  void EndObject();
  // False (and the key remembered, if it is the first) when the innermost
  // open object already has `key`.
  bool Key(const std::string& key);
  // The first repeated key, in document order; empty if none.
  const std::string& first() const { return first_; }
  bool found() const { return found_; }

 private:
  std::vector<std::unordered_set<std::string>> keys_;  // per open object, reused
  size_t depth_ = 0;
  bool found_ = false;
  std::string first_;
};
std::string RepeatedKeyMessage(const std::string& key, const std::string& source);

// Writes `contents` to `path` through a temporary file in the same folder and
// a rename, so readers see either the old file or the complete new one.
void WriteFileAtomically(const std::string& path, const std::string& contents);

// Throws the Error WriteFileAtomically would when `path` cannot be written
// (its folder missing or not writable, the path a folder), by creating and
// removing the temporary it would use: for commands that measure for
// minutes before they write.
void CheckWritable(const std::string& path);

}  // namespace devplace
