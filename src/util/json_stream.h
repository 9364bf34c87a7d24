// Parsing a large JSON document without holding all of it as a DOM: the
// elements of one top-level array are handed over one at a time, as small
// DOMs, and dropped. A graph file of a million ops (430-510 MB of text)
// parsed whole by nlohmann takes about five times its size in memory; read
// this way it takes its text and its result.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace devplace {

// Builds one JSON value from nlohmann's SAX events, as nlohmann's own DOM
// parser would (a repeated key keeps its last value; HasKey lets a caller
// refuse it first, as ParseJson does).
class JsonValueBuilder {
 public:
  // Each of these returns true once the value is complete.
  bool Scalar(nlohmann::json value);
  bool StartObject();
  bool StartArray();
  bool End();  // of the innermost object or array
  void Key(std::string key);
  // Whether the innermost open object already has `key`.
  bool HasKey(const std::string& key) const;

  bool building() const { return !stack_.empty(); }
  // The finished value; the builder is empty again after.
  nlohmann::json Take();

 private:
  // Puts `value` where the innermost container expects it; returns where.
  nlohmann::json* Place(nlohmann::json value);

  nlohmann::json root_;
  std::vector<nlohmann::json*> stack_;  // open containers, innermost last
  std::string key_;                     // the key of the next object member
};

// What ParseJsonStreamingArray kept of the document.
struct StreamedJson {
  // The document without the streamed array: the top-level object with
  // `array_key` set to an empty array where it was an array (other values
  // of it are kept, so a reader can say what it found). When the document
  // is not an object, a value of the document's type, not its contents.
  nlohmann::json top;
  // Elements of the last `array_key` array (a repeated key restarts it, as
  // the last value of a repeated key is the one that counts).
  int64_t elements = 0;
};

// Parses `text` (from `source`) as ParseJson does, with the same checks
// and the same errors (util/files.h), except that each element of the
// top-level object's `array_key` array goes to `on_element(element,
// index)` as soon as it is complete instead of into the result.
// `on_array_start` is called when such an array begins (again if the key
// repeats). The callbacks must not throw: a reader that finds a problem in
// an element records it and reports it after the parse, so that a syntax
// error anywhere in the text is still the error reported, as with ParseJson.
StreamedJson ParseJsonStreamingArray(std::string_view text, const std::string& source, const std::string& array_key,
                                     const std::function<void()>& on_array_start,
                                     const std::function<void(nlohmann::json&&, int64_t)>& on_element);

}  // namespace devplace
