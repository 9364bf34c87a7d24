#include "util/json_stream.h"

#include <cassert>
#include <optional>
#include <utility>

#include "util/error.h"
#include "util/files.h"

namespace devplace {

using nlohmann::json;

json* JsonValueBuilder::Place(json value) {
  if (stack_.empty()) {
    root_ = std::move(value);
    return &root_;
  }
  json& parent = *stack_.back();
  if (parent.is_array()) {
    parent.push_back(std::move(value));
    return &parent.back();
  }
  // operator[] then assignment: a repeated key keeps its last value, as in
  // nlohmann's DOM parser.
  json& member = parent[key_];
  member = std::move(value);
  return &member;
}

bool JsonValueBuilder::Scalar(json value) {
  Place(std::move(value));
  return stack_.empty();
}

bool JsonValueBuilder::StartObject() {
  // A pointer into the parent stays valid while this child is open: the
  // parent gains nothing until the child ends.
  stack_.push_back(Place(json::object()));
  return false;
}

bool JsonValueBuilder::StartArray() {
  stack_.push_back(Place(json::array()));
  return false;
}

bool JsonValueBuilder::End() {
  assert(!stack_.empty());
  stack_.pop_back();
  return stack_.empty();
}

void JsonValueBuilder::Key(std::string key) { key_ = std::move(key); }

bool JsonValueBuilder::HasKey(const std::string& key) const {
  return !stack_.empty() && stack_.back()->is_object() && stack_.back()->contains(key);
}

json JsonValueBuilder::Take() {
  assert(stack_.empty());
  json value = std::move(root_);
  root_ = json();
  return value;
}

namespace {

// nlohmann's SAX interface over the document: the top-level object's
// members are built whole into StreamedJson::top, except the elements of
// `array_key` arrays, each built alone and handed on.
class StreamingHandler {
 public:
  StreamingHandler(const std::string& source, const std::string& array_key, const std::function<void()>& on_array_start,
                   const std::function<void(json&&, int64_t)>& on_element)
      : source_(source), array_key_(array_key), on_array_start_(on_array_start), on_element_(on_element) {}

  bool null() { return Value(nullptr); }
  bool boolean(bool value) { return Value(value); }
  bool number_integer(json::number_integer_t value) { return Value(value); }
  bool number_unsigned(json::number_unsigned_t value) { return Value(value); }
  bool number_float(json::number_float_t value, const json::string_t&) { return Value(value); }
  bool string(json::string_t& value) { return Value(std::move(value)); }
  bool binary(json::binary_t& value) { return Value(json::binary(std::move(value))); }  // not in JSON text

  bool start_object(size_t) {
    if (builder_.building()) return Done(builder_.StartObject());
    switch (level_) {
      case Level::kDocument:
        result_.top = json::object();
        level_ = Level::kTop;
        return true;
      case Level::kTop:
      case Level::kArray:
        return Done(builder_.StartObject());
      case Level::kOther:
        others_.StartObject();
        return true;
    }
    return true;
  }

  bool start_array(size_t) {
    if (builder_.building()) return Done(builder_.StartArray());
    switch (level_) {
      case Level::kDocument:
        // Not an object: a reader needs only to know that. Its contents
        // are parsed (a syntax error in them is still reported) but kept
        // nowhere.
        result_.top = json::array();
        level_ = Level::kOther;
        return true;
      case Level::kTop:
        if (key_ == array_key_) {
          result_.top[key_] = json::array();
          result_.elements = 0;
          on_array_start_();
          level_ = Level::kArray;
          return true;
        }
        return Done(builder_.StartArray());
      case Level::kArray: return Done(builder_.StartArray());
      case Level::kOther: return true;
    }
    return true;
  }

  bool end_object() {
    if (builder_.building()) return Done(builder_.End());
    if (level_ == Level::kTop) {
      level_ = Level::kOther;  // the document ends
    } else if (level_ == Level::kOther) {
      others_.EndObject();
    }
    return true;
  }

  bool end_array() {
    if (builder_.building()) return Done(builder_.End());
    if (level_ == Level::kArray) level_ = Level::kTop;
    return true;
  }

  // A repeated key is noted where the second one appears, as ParseJson's
  // key events see it, so that both name the same first one.
  bool key(json::string_t& key) {
    if (builder_.building()) {
      if (builder_.HasKey(key)) Repeated(key);
      builder_.Key(std::move(key));
    } else if (level_ == Level::kTop) {
      if (result_.top.contains(key)) Repeated(key);
      key_ = std::move(key);
    } else if (level_ == Level::kOther) {
      if (!others_.Key(key)) Repeated(key);
    }
    return true;
  }

  // The parse stops here; the message is made now, while `e` still has
  // its own type (a syntax error or a number out of range).
  bool parse_error(size_t, const std::string&, const json::exception& e) {
    error_ = JsonParseErrorMessage(e, source_);
    return false;
  }

  StreamedJson& result() { return result_; }
  const std::optional<std::string>& error() const { return error_; }
  const std::optional<std::string>& repeated_key() const { return repeated_key_; }

 private:
  enum class Level {
    kDocument,  // nothing read yet
    kTop,       // in the top-level object
    kArray,     // in a top-level `array_key` array
    kOther,     // the document is not an object, or it has ended
  };

  void Repeated(const std::string& key) {
    if (!repeated_key_) repeated_key_ = key;
  }

  bool Value(json value) {
    if (builder_.building()) return Done(builder_.Scalar(std::move(value)));
    switch (level_) {
      case Level::kDocument:
        result_.top = std::move(value);  // a scalar document
        level_ = Level::kOther;
        return true;
      case Level::kTop:
      case Level::kArray:
        return Done(builder_.Scalar(std::move(value)));
      case Level::kOther: return true;
    }
    return true;
  }

  // After a builder event: hands a complete value to where it belongs.
  bool Done(bool complete) {
    if (!complete) return true;
    if (level_ == Level::kArray) {
      on_element_(builder_.Take(), result_.elements++);
    } else {
      result_.top[key_] = builder_.Take();
    }
    return true;
  }

  const std::string& source_;
  const std::string& array_key_;
  const std::function<void()>& on_array_start_;
  const std::function<void(json&&, int64_t)>& on_element_;
  Level level_ = Level::kDocument;
  std::string key_;
  JsonValueBuilder builder_;
  StreamedJson result_;
  std::optional<std::string> error_;
  std::optional<std::string> repeated_key_;  // the first
  RepeatedKeyFinder others_;  // keys of objects kept nowhere (a document that is not an object)
};

}  // namespace

StreamedJson ParseJsonStreamingArray(std::string_view text, const std::string& source, const std::string& array_key,
                                     const std::function<void()>& on_array_start,
                                     const std::function<void(json&&, int64_t)>& on_element) {
  CheckJsonNesting(text, source);
  StreamingHandler handler(source, array_key, on_array_start, on_element);
  if (!json::sax_parse(text, &handler)) {
    assert(handler.error());
    throw Error(*handler.error());
  }
  if (handler.repeated_key()) throw Error(RepeatedKeyMessage(*handler.repeated_key(), source));
  return std::move(handler.result());
}

}  // namespace devplace
