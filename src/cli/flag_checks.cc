#include "cli/flag_checks.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

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

}  // namespace devplace
