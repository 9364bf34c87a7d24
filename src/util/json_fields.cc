#include "util/json_fields.h"

#include <cmath>
#include <cstdio>

#include "util/error.h"

namespace devplace {

using nlohmann::json;

namespace {

// 2^53: every integer up to it is a double, and none is lost.
constexpr double kLargestExactDouble = 9007199254740992.0;

}  // namespace

std::optional<int64_t> WholeNumber(const json& value) {
  if (!value.is_number_float()) return std::nullopt;
  const double d = value.get<double>();
  if (!std::isfinite(d) || std::trunc(d) != d || std::fabs(d) > kLargestExactDouble) return std::nullopt;
  return static_cast<int64_t>(d);
}

std::optional<int64_t> IntegerIn(const json& value, IntRange range) {
  int64_t v = 0;
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    v = static_cast<int64_t>(u);
  } else if (value.is_number_integer()) {
    v = value.get<int64_t>();
  } else if (auto whole = WholeNumber(value)) {
    v = *whole;
  } else {
    return std::nullopt;
  }
  if (v < range.min || v > range.max) return std::nullopt;
  return v;
}

std::string DescribeJsonValue(const json& value) {
  switch (value.type()) {
    case json::value_t::string: {
      // Appended piecewise: "\"" + std::string trips GCC 12's -Wrestrict.
      std::string text = "\"";
      text += ForMessage(value.get_ref<const json::string_t&>(), 80);
      text += '"';
      return text;
    }
    case json::value_t::number_integer: return std::to_string(value.get<int64_t>());
    case json::value_t::number_unsigned: return std::to_string(value.get<uint64_t>());
    case json::value_t::number_float: {
      char text[32];
      std::snprintf(text, sizeof text, "%.17g", value.get<double>());
      return text;
    }
    case json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    case json::value_t::null: return "null";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "a value of type " + std::string(value.type_name());
  }
}

JsonFields::JsonFields(const json& node, std::string where) : node_(node), where_(std::move(where)) {}

void JsonFields::Fail(const std::string& problem) const { throw Error(where_ + ": " + problem); }

const json* JsonFields::Find(const char* field) const {
  if (!node_.is_object()) return nullptr;
  auto it = node_.find(field);
  if (it == node_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool JsonFields::Has(const char* field) const { return Find(field) != nullptr; }

const json& JsonFields::Required(const char* field) const {
  const json* value = Find(field);
  if (value == nullptr) Fail(std::string("missing required field '") + field + "'");
  return *value;
}

std::string JsonFields::String(const char* field) const {
  const json& value = Required(field);
  if (!value.is_string()) Fail(std::string("field '") + field + "' must be a string, not " + DescribeJsonValue(value));
  return value.get<std::string>();
}

std::string JsonFields::String(const char* field, const std::string& fallback) const {
  return Has(field) ? String(field) : fallback;
}

double JsonFields::CheckNumber(const char* field, const json& value, Sign sign) const {
  if (!value.is_number()) Fail(std::string("field '") + field + "' must be a number, not " + DescribeJsonValue(value));
  const double v = value.get<double>();
  // The parser rejects numbers outside double range; this guards documents
  // built in code.
  if (!std::isfinite(v)) Fail(std::string("field '") + field + "' must be a finite number");
  if (sign == Sign::kNonNegative && v < 0) {
    Fail(std::string("field '") + field + "' must not be negative (it is " + DescribeJsonValue(value) + ")");
  }
  if (sign == Sign::kPositive && !(v > 0)) {
    Fail(std::string("field '") + field + "' must be positive (it is " + DescribeJsonValue(value) + ")");
  }
  return v;
}

double JsonFields::Number(const char* field, Sign sign) const { return CheckNumber(field, Required(field), sign); }

double JsonFields::Number(const char* field, double fallback, Sign sign) const {
  const json* value = Find(field);
  return value == nullptr ? fallback : CheckNumber(field, *value, sign);
}

int64_t JsonFields::CheckInteger(const char* field, const json& value, IntRange range) const {
  if (value.is_number_float() && !WholeNumber(value)) {
    const double d = value.get<double>();
    Fail(std::string("field '") + field + "' must be an integer, not " + DescribeJsonValue(value) +
         (std::trunc(d) == d ? " (a number this large written with a decimal point or exponent is not exact: write its digits)"
                             : ""));
  }
  if (!value.is_number()) {
    Fail(std::string("field '") + field + "' must be an integer, not " + DescribeJsonValue(value));
  }
  auto v = IntegerIn(value, range);
  if (v) return *v;
  const std::string is = std::string("field '") + field + "' is " + DescribeJsonValue(value);
  if (range.max != std::numeric_limits<int64_t>::max()) {
    Fail(is + ", outside " + std::to_string(range.min) + ".." + std::to_string(range.max));
  }
  const bool below = value.is_number_float() ? value.get<double>() < static_cast<double>(range.min)
                                              : !value.is_number_unsigned() && value.get<int64_t>() < range.min;
  if (below) {
    Fail(is + "; it must be at least " + std::to_string(range.min));
  }
  Fail(is + ", more than a signed 64-bit integer holds");
}

int64_t JsonFields::Integer(const char* field, IntRange range) const {
  return CheckInteger(field, Required(field), range);
}

int64_t JsonFields::Integer(const char* field, int64_t fallback, IntRange range) const {
  const json* value = Find(field);
  return value == nullptr ? fallback : CheckInteger(field, *value, range);
}

bool JsonFields::Bool(const char* field, bool fallback) const {
  const json* value = Find(field);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) Fail(std::string("field '") + field + "' must be true or false, not " + DescribeJsonValue(*value));
  return value->get<bool>();
}

const json& JsonFields::Array(const char* field) const {
  static const json kEmpty = json::array();
  const json* value = Find(field);
  if (value == nullptr) return kEmpty;
  if (!value->is_array()) Fail(std::string("field '") + field + "' must be an array, not " + DescribeJsonValue(*value));
  return *value;
}

const json& JsonFields::RequiredArray(const char* field) const {
  Required(field);
  return Array(field);
}

}  // namespace devplace
