// Checks every flag value of every command, whatever the flag's own checks
// say. No value may be empty (an unset shell variable must not quietly mean
// "the default"). A numeric one: a floating-point flag must be a finite number ("nan" passes ">= 0"
// checks and "1e400" reads as infinity), and an integer flag must be plain
// decimal digits that fit (strtoll and strtoull, which CLI11 uses, read "-1"
// as 2^64 - 1 for an unsigned flag, clamp 99999999999999999999 without a
// word, and read "010" as octal 8).
#pragma once

#include <CLI/CLI.hpp>

namespace devplace {

// Adds the checks to every option of `app` and of its subcommands, ahead of
// the options' own validators. Call once, after every command is added.
void AddFlagValueChecks(CLI::App& app);

// The checks themselves, for tests: "" when `text` is acceptable for a flag
// of CLI11 type name `type_name` ("FLOAT", "INT", "UINT"), else the problem.
std::string CheckNumericFlagText(const std::string& type_name, const std::string& text);

// "" when `text` is acceptable for a flag taking text (a path, a name, a
// list), else the problem: it must not be empty.
std::string CheckTextFlagValue(const std::string& text);

// A flag's own bounds, said in words: "must not be negative (got -5)",
// "must be between 1 and 1024 (got 2000)". CLI11's NonNegativeNumber,
// PositiveNumber and Range print their bounds with %f, so "--max-samples -5"
// read "Value -5 not in range 0.000000 to 1797693134862315708145...", 300
// digits of the largest double. Values reach these already checked to be
// finite numbers (AddFlagValueChecks).
CLI::Validator NotNegative();
CLI::Validator Positive();
CLI::Validator InRange(double min, double max);

// The problem InRange(min, max) finds with `text`, or "": for tests.
std::string CheckFlagRange(const std::string& text, double min, double max, bool min_exclusive = false);

}  // namespace devplace
