// Reads a learned placer's checkpoint facts (learned/files/checkpoint_file.h's JSON
// part), each checked for type and range; every problem is one Error naming
// the file. No torch here.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "util/error.h"

namespace devplace {

class CheckpointFacts {
 public:
  // `noun`: what the file is called in messages ("checkpoint", "GDP policy file").
  CheckpointFacts(const std::string& path, const nlohmann::json& facts, std::string noun = "checkpoint")
      : path_(ForMessage(path)), facts_(facts), noun_(std::move(noun)) {}

  const nlohmann::json& facts() const { return facts_; }

  [[noreturn]] void Fail(const std::string& problem) const { throw Error(path_ + ": " + problem); }

  const nlohmann::json& Field(const char* key) const {
    auto it = facts_.find(key);
    if (it == facts_.end()) Fail(noun_ + " lacks '" + key + "'");
    return *it;
  }
  int64_t Integer(const char* key, int64_t min, int64_t max) const { return IntegerOf(Field(key), key, min, max); }
  int64_t IntegerOf(const nlohmann::json& value, const char* key, int64_t min, int64_t max) const {
    if (!value.is_number_integer() || (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX))) {
      Fail(noun_ + "'s '" + key + "' is not an integer");
    }
    const int64_t v = value.get<int64_t>();
    if (v < min || v > max) {
      Fail(noun_ + "'s '" + key + "' is " + std::to_string(v) + ", outside " + std::to_string(min) + ".." +
           std::to_string(max));
    }
    return v;
  }
  double Number(const char* key, double min) const { return NumberOf(Field(key), key, min); }
  double NumberOf(const nlohmann::json& value, const char* key, double min) const {
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < min) {
      Fail(noun_ + "'s '" + key + "' is not a finite number of at least " + ShowNumber(min));
    }
    return value.get<double>();
  }
  std::string String(const char* key) const {
    const nlohmann::json& value = Field(key);
    if (!value.is_string()) Fail(noun_ + "'s '" + key + "' is not a string");
    return value.get<std::string>();
  }
  bool Boolean(const char* key) const {
    const nlohmann::json& value = Field(key);
    if (!value.is_boolean()) Fail(noun_ + "'s '" + key + "' is not true or false");
    return value.get<bool>();
  }
  const nlohmann::json& Object(const char* key) const {
    const nlohmann::json& value = Field(key);
    if (!value.is_object()) Fail(noun_ + "'s '" + key + "' is not an object");
    return value;
  }
  const nlohmann::json& Array(const char* key) const {
    const nlohmann::json& value = Field(key);
    if (!value.is_array()) Fail(noun_ + "'s '" + key + "' is not a list");
    return value;
  }

 private:
  std::string path_;
  const nlohmann::json& facts_;
  std::string noun_;
};

}  // namespace devplace
