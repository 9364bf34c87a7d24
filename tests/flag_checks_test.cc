// The checks every numeric flag of every command gets (src/cli/flag_checks.h).
#include "cli/flag_checks.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "run_devplace.h"
#include "test_files.h"

namespace devplace {
namespace {

TEST(FlagChecks, FloatsMustBeFinite) {
  EXPECT_EQ(CheckNumericFlagText("FLOAT", "0.5"), "");
  EXPECT_EQ(CheckNumericFlagText("FLOAT", "-3e2"), "");
  EXPECT_EQ(CheckNumericFlagText("FLOAT", "1e-320"), "");  // subnormal, still a number
  for (const char* bad : {"nan", "NaN", "-nan", "inf", "-inf", "infinity", "1e400", "-1e400", "", "1.5x"}) {
    EXPECT_NE(CheckNumericFlagText("FLOAT", bad), "") << bad;
  }
}

TEST(FlagChecks, IntegersArePlainDecimalsThatFit) {
  EXPECT_EQ(CheckNumericFlagText("INT", "-12"), "");
  EXPECT_EQ(CheckNumericFlagText("UINT", "18446744073709551615"), "");
  for (const char* bad : {"-1", "18446744073709551616", "0x10", "1e3", "", "+"}) {
    EXPECT_NE(CheckNumericFlagText("UINT", bad), "") << bad;
  }
  for (const char* bad : {"99999999999999999999", "0x10", "1.0", "-", "12abc"}) {
    EXPECT_NE(CheckNumericFlagText("INT", bad), "") << bad;
  }
  EXPECT_EQ(CheckNumericFlagText("TEXT", "nan"), "");  // a file may be called nan
}

// The checks reach flags of every command, including ones whose own check
// a NaN would pass (">= 0") and ones with no check at all.
TEST(FlagChecks, EveryCommandRejectsNonFiniteAndNegativeUnsigned) {
  struct Case {
    std::string args;
    std::string flag;
  };
  const std::vector<Case> cases = {
      {"simulate --graph tiny --cluster k80x2 --placement single:gpu:0 --jitter nan", "--jitter"},
      {"simulate --graph tiny --cluster k80x2 --placement single:gpu:0 --failure-probability nan",
       "--failure-probability"},
      {"simulate --graph tiny --cluster k80x2 --placement single:gpu:0 --seed -1", "--seed"},
      {"place --graph tiny --cluster k80x2 --max-seconds nan", "--max-seconds"},
      {"place --graph tiny --cluster k80x2 --stay-bias inf", "--stay-bias"},
      {"place --graph tiny --cluster k80x2 --learning-rate 1e400", "--learning-rate"},
  };
  for (const Case& c : cases) {
    testing::Outcome o = testing::RunDevplace(c.args);
    EXPECT_EQ(o.exit_code, 2) << c.args;
    testing::ExpectCleanError(o, c.flag);
  }
}

// An empty value (an unset shell variable) never quietly means "the
// default": `--policy ''` placed from scratch, `--out ''` wrote to the
// default folder. Every text flag of every command refuses it and writes
// nothing.
TEST(FlagChecks, EveryTextFlagRefusesAnEmptyValue) {
  testing::TempDir dir;
  const std::string out = dir.File("out");
  const std::vector<std::string> flags_given_empty = {
      "place --graph tiny --cluster k80x2 --method gdp --max-steps 1 --out " + out + " --policy ''",
      "place --graph tiny --cluster k80x2 --method expert --out " + out + " --warm-start ''",
      "place --graph tiny --cluster k80x2 --method expert --out ''",
      "place --graph tiny --cluster k80x2 --method expert --out " + out + " --op-times ''",
      "place --graph tiny --cluster k80x2 --method '' --out " + out,
      "place --graph '' --cluster k80x2 --method expert --out " + out,
      "simulate --graph tiny --cluster k80x2 --placement single:gpu:0 --trace ''",
      "simulate --graph tiny --cluster '' --placement single:gpu:0",
      "export --graph tiny --cluster k80x2 --method expert --format '' -o " + out,
      "export --graph tiny --cluster k80x2 --method expert -o ''",
      "compare --graph tiny --cluster k80x2 --methods ''",
      "report --graph tiny --cluster k80x2 -o " + out + " --run ''",
      "generate '' -o " + out,
      "import model.onnx -o " + out + " --dim ''",
      "train --method gdp --graphs '' --cluster k80x2 -o " + out,
      "clusters --show ''",
      "info --graph ''",
  };
  for (const std::string& args : flags_given_empty) {
    testing::Outcome o = testing::RunDevplace(args);
    EXPECT_EQ(o.exit_code, 2) << args;
    testing::ExpectCleanError(o, "must not be empty");
    EXPECT_FALSE(std::filesystem::exists(out)) << args;
  }
  EXPECT_EQ(CheckTextFlagValue(""), "must not be empty (leave the flag out for its default)");
  EXPECT_EQ(CheckTextFlagValue("-"), "");
}

}  // namespace
}  // namespace devplace
