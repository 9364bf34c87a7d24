#include "cli/flag_checks.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "util/error.h"

namespace devplace {
namespace {

std::string CheckFloat(const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(begin, &end);
  if (text.empty() || end != begin + text.size()) return "'" + ForMessage(text) + "' is not a number";
  if (std::isnan(value)) return "must be a number, not NaN";
  if (std::isinf(value)) return "'" + ForMessage(text) + "' is infinite or outside the range of a double";
  return "";
}

std::string CheckInteger(const std::string& text, bool is_unsigned) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (is_unsigned && !text.empty() && text[0] == '-') return "must not be negative (got " + ForMessage(text) + ")";
  // Plain decimal only: no octal or hex surprises, no signs or spaces.
  const char* digits = (!text.empty() && text[0] == '-') ? begin + 1 : begin;
  if (digits == end) return "'" + ForMessage(text) + "' is not an integer";
  for (const char* p = digits; p != end; ++p) {
    if (*p < '0' || *p > '9') return "'" + ForMessage(text) + "' is not a decimal integer";
  }
  std::errc status;
  if (is_unsigned) {
    uint64_t value = 0;
    status = std::from_chars(begin, end, value).ec;
  } else {
    int64_t value = 0;
    status = std::from_chars(begin, end, value).ec;
  }
  if (status != std::errc()) return ForMessage(text) + " is too large";
  return "";
}

void AddChecksTo(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_size() == 0) continue;  // a flag: takes no value
    const std::string full_type = option->get_type_name();
    const std::string type = full_type.substr(0, full_type.find(':'));
    if (type != "FLOAT" && type != "INT" && type != "UINT") {
      // `--policy ''` (an unset shell variable) must not quietly mean "no
      // policy": every value a user types means something or is refused.
      option->transform(CLI::Validator([](std::string& text) { return CheckTextFlagValue(text); }, ""));
      continue;
    }
    // transform() puts the check ahead of the option's own validators, so a
    // NaN is named as such rather than passing a range check.
    option->transform(CLI::Validator([type](std::string& text) { return CheckNumericFlagText(type, text); }, ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) AddChecksTo(*sub);
}

}  // namespace

std::string CheckNumericFlagText(const std::string& type_name, const std::string& text) {
  if (type_name == "FLOAT") return CheckFloat(text);
  if (type_name == "INT") return CheckInteger(text, /*is_unsigned=*/false);
  if (type_name == "UINT") return CheckInteger(text, /*is_unsigned=*/true);
  return "";
}

std::string CheckTextFlagValue(const std::string& text) {
  return text.empty() ? "must not be empty (leave the flag out for its default)" : "";
}

void AddFlagValueChecks(CLI::App& app) { AddChecksTo(app); }

namespace {

// A bound as a person writes it: 1024, 0.001, 1e+09 only past a billion.
std::string BoundText(double bound) {
  char buffer[64];
  if (bound == std::floor(bound) && std::fabs(bound) < 1e9) {
    std::snprintf(buffer, sizeof buffer, "%.0f", bound);
  } else {
    std::snprintf(buffer, sizeof buffer, "%g", bound);
  }
  return buffer;
}

}  // namespace

std::string CheckFlagRange(const std::string& text, double min, double max, bool min_exclusive) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || std::isnan(value)) return "'" + ForMessage(text) + "' is not a number";
  const std::string got = " (got " + ForMessage(text) + ")";
  if (max == std::numeric_limits<double>::infinity()) {
    if (min_exclusive && value <= min) return (min == 0 ? std::string("must be positive") : "must be above " + BoundText(min)) + got;
    if (value < min) return (min == 0 ? std::string("must not be negative") : "must be at least " + BoundText(min)) + got;
    return "";
  }
  if (value < min || (min_exclusive && value == min) || value > max) {
    return "must be between " + BoundText(min) + " and " + BoundText(max) + got;
  }
  return "";
}

CLI::Validator NotNegative() {
  return CLI::Validator(
      [](std::string& text) { return CheckFlagRange(text, 0, std::numeric_limits<double>::infinity()); }, "NONNEGATIVE");
}

CLI::Validator Positive() {
  return CLI::Validator(
      [](std::string& text) { return CheckFlagRange(text, 0, std::numeric_limits<double>::infinity(), true); }, "POSITIVE");
}

CLI::Validator InRange(double min, double max) {
  return CLI::Validator([min, max](std::string& text) { return CheckFlagRange(text, min, max); },
                        "[" + BoundText(min) + " - " + BoundText(max) + "]");
}

}  // namespace devplace
