// The checks every numeric flag of every command gets (src/cli/flag_checks.h).
#include "cli/flag_checks.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
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

TEST(FlagChecks, BoundsAreSaidInWords) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(CheckFlagRange("-5", 0, inf), "must not be negative (got -5)");
  EXPECT_EQ(CheckFlagRange("0", 0, inf), "");
  EXPECT_EQ(CheckFlagRange("0", 0, inf, true), "must be positive (got 0)");
  EXPECT_EQ(CheckFlagRange("1e-9", 0, inf, true), "");
  EXPECT_EQ(CheckFlagRange("2000", 1, 1024), "must be between 1 and 1024 (got 2000)");
  EXPECT_EQ(CheckFlagRange("0", 1, 1024), "must be between 1 and 1024 (got 0)");
  EXPECT_EQ(CheckFlagRange("1.5", 0.0, 1.0), "must be between 0 and 1 (got 1.5)");
  EXPECT_EQ(CheckFlagRange("0", 0.001, 1e6), "must be between 0.001 and 1000000 (got 0)");
  EXPECT_EQ(CheckFlagRange("2e12", 1, double(int64_t{1} << 40)), "must be between 1 and 1.09951e+12 (got 2e12)");
  EXPECT_EQ(CheckFlagRange("1024", 1, 1024), "");
}

// Every command's bounds read so: CLI11's own checks printed them with %f,
// "--max-samples -5" as "Value -5 not in range 0.000000 to 1797693134...",
// 300 digits of the largest double.
TEST(FlagChecks, EveryCommandSaysItsBoundsInWords) {
  struct Case {
    std::string args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"place --graph tiny --cluster k80x2 --method mcmc --max-samples -5", "--max-samples: must not be negative (got -5)"},
      {"place --graph tiny --cluster k80x2 --learning-rate -1", "--learning-rate: must be positive (got -1)"},
      {"place --graph tiny --cluster k80x2 --lr-decay 2", "--lr-decay: must be between 0 and 1 (got 2)"},
      {"place --graph tiny --cluster k80x2 --workers 100000", "--workers: must be between 0 and 256 (got 100000)"},
      {"compare --graph tiny --cluster k80x2 --max-samples -1", "--max-evaluations: must not be negative (got -1)"},
      {"pretrain --graphs tiny -o x.pt --patience 0", "--patience: must be between 1 and"},
      {"train --method gdp --graphs tiny --cluster k80x2 -o x.pt --gdp-segment 0", "--gdp-segment: must be between 1 and"},
  };
  for (const Case& c : cases) {
    testing::Outcome o = testing::RunDevplace(c.args);
    EXPECT_EQ(o.exit_code, 2) << c.args;
    testing::ExpectCleanError(o, c.expected);
    EXPECT_EQ(o.out.find("000000"), std::string::npos) << o.out;
    EXPECT_LT(o.out.size(), 200u) << o.out;
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
