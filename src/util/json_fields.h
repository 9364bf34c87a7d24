// Checked reads of the fields of one JSON object, shared by every devplace
// file reader (graph, cluster, placement, ...). Each read checks the type and
// the range before converting, so that a mistake in a file is one Error line
// naming the input, the object and the field, never an nlohmann exception
// ("internal error") or a value silently cut to fit.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.h"  // IsValidUtf8

namespace devplace {

// Inclusive bounds of an integer field.
struct IntRange {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};
inline constexpr IntRange kInt32Range{std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
inline constexpr IntRange kNonNegative{0, std::numeric_limits<int64_t>::max()};

// What sign a number field must have.
enum class Sign { kAny, kNonNegative, kPositive };

// `value` as an int64 if it is a JSON integer within `range` (unsigned
// values above INT64_MAX are out of every range), else nullopt. A number
// written with a decimal point or exponent counts where it is whole and at
// most 2^53 in size (1.6e10 bytes, 3.0): JSON has one number type, and
// tools (Python's json, spreadsheets) write whole numbers so; above 2^53 a
// double no longer tells which integer was meant.
std::optional<int64_t> WholeNumber(const nlohmann::json& value);
std::optional<int64_t> IntegerIn(const nlohmann::json& value, IntRange range);
std::optional<int64_t> IntegerIn(const nlohmann::json& value, IntRange range);

// A short, message-safe description of a JSON value for an error: a string's
// text through ForMessage, a number, or the value's type ("an array"). Never
// dumps the value, so a deep or non-UTF-8 value cannot throw or recurse.
std::string DescribeJsonValue(const nlohmann::json& value);


class JsonFields {
 public:
  // `where` names the object in messages ("model.json: op 3 ('a')") and must
  // already be message-safe: build it with ForMessage.
  JsonFields(const nlohmann::json& node, std::string where);

  const std::string& where() const { return where_; }
  [[noreturn]] void Fail(const std::string& problem) const;

  // Present and not null (null counts as absent).
  bool Has(const char* field) const;
  const nlohmann::json& Required(const char* field) const;

  std::string String(const char* field) const;
  std::string String(const char* field, const std::string& fallback) const;

  // Finite numbers (integers or not) of the given sign.
  double Number(const char* field, Sign sign = Sign::kAny) const;
  double Number(const char* field, double fallback, Sign sign = Sign::kAny) const;

  int64_t Integer(const char* field, IntRange range = {}) const;
  int64_t Integer(const char* field, int64_t fallback, IntRange range = {}) const;

  bool Bool(const char* field, bool fallback) const;

  // An empty array when absent.
  const nlohmann::json& Array(const char* field) const;
  const nlohmann::json& RequiredArray(const char* field) const;

 private:
  const nlohmann::json* Find(const char* field) const;
  double CheckNumber(const char* field, const nlohmann::json& value, Sign sign) const;
  int64_t CheckInteger(const char* field, const nlohmann::json& value, IntRange range) const;

  const nlohmann::json& node_;
  std::string where_;
};

}  // namespace devplace
