// The learned placers' shared flags (src/cli/learned_flags.h): which of them a
// policy file fixes, and that those are refused beside --policy.
#include "cli/learned_flags.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <set>
#include <string>
#include <vector>

#include "util/error.h"

namespace devplace {
namespace {

struct Flags {
  CLI::App app;
  LearnedOptions learned;
  std::vector<const CLI::Option*> fixed_by_policy;

  Flags() {
    fixed_by_policy = AddGdpNetworkFlags(&app, learned, "GDP");
    for (const CLI::Option* option : AddMarsFlags(&app, learned, "Mars")) fixed_by_policy.push_back(option);
  }

  // Parses `option` alone, with a value where it takes one (8: valid for
  // every size flag), then applies the --policy check.
  void ParseAndCheck(const CLI::Option& option, const std::string& policy_file) {
    std::vector<std::string> args;  // CLI11 parses a reversed list
    // A value each flag takes: a size, or one of a choice's names.
    const std::string name = option.get_name();
    if (option.get_expected_min() > 0) args.push_back(name == "--gdp-head" ? "devices" : name == "--gdp-device-scoring" ? "dot" : "8");
    args.push_back(option.get_name());
    app.parse(args);
    learned.policy_file = policy_file;
    RefuseFlagsFixedByPolicy(fixed_by_policy, learned);
  }
};

std::set<std::string> NamesOf(const std::vector<const CLI::Option*>& options) {
  std::set<std::string> names;
  for (const CLI::Option* option : options) names.insert(option->get_name());
  return names;
}

// Each flag these functions register is sorted here, as fixed by a policy
// file or as a setting of the run: a flag added later fails this test until
// it is sorted, so that a size flag is never silently ignored beside
// --policy.
TEST(LearnedFlags, EveryNetworkFlagIsEitherFixedByThePolicyFileOrASettingOfTheRun) {
  Flags flags;
  const std::set<std::string> fixed = {"--gdp-hidden",         "--gdp-sage-layers", "--gdp-placer-layers",
                                       "--gdp-heads",          "--gdp-segment",     "--gdp-no-attention",
                                       "--gdp-no-superposition", "--gdp-head",      "--gdp-device-scoring",
                                       "--gdp-no-device-links",  "--mars-hidden",   "--mars-segment",
                                       "--mars-encoder-hidden",  "--mars-encoder-layers"};
  const std::set<std::string> per_run = {"--start-bias",   "--gdp-no-baseline-probes", "--stretch-noise",
                                         "--stretch-noise-steps", "--window-moves",    "--encoder",
                                         "--mars-encoder-learning-rate"};
  EXPECT_EQ(NamesOf(flags.fixed_by_policy), fixed);
  for (const CLI::Option* option : flags.app.get_options()) {
    const std::string name = option->get_name();
    if (name == "--help") continue;
    EXPECT_TRUE(fixed.count(name) + per_run.count(name) == 1) << name << " is not sorted";
  }
}

TEST(LearnedFlags, AFlagThePolicyFileFixesIsRefusedBesideItInOneLineNamingIt) {
  const std::vector<const CLI::Option*> fixed = Flags().fixed_by_policy;
  ASSERT_FALSE(fixed.empty());
  for (size_t i = 0; i < fixed.size(); ++i) {
    Flags flags;
    const CLI::Option& option = *flags.fixed_by_policy[i];
    try {
      flags.ParseAndCheck(option, "policy.pt");
      ADD_FAILURE() << option.get_name() << " was accepted beside --policy";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.find(option.get_name() + " does not go with --policy"), 0u) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

TEST(LearnedFlags, WithoutAPolicyFileTheSizeFlagsAreTaken) {
  const size_t count = Flags().fixed_by_policy.size();
  for (size_t i = 0; i < count; ++i) {
    Flags flags;
    EXPECT_NO_THROW(flags.ParseAndCheck(*flags.fixed_by_policy[i], "")) << flags.fixed_by_policy[i]->get_name();
  }
}

TEST(LearnedFlags, ASettingOfTheRunGoesWithAPolicyFile) {
  Flags flags;
  flags.app.parse(std::vector<std::string>{"0.5", "--stretch-noise", "6", "--start-bias"});
  flags.learned.policy_file = "policy.pt";
  EXPECT_NO_THROW(RefuseFlagsFixedByPolicy(flags.fixed_by_policy, flags.learned));
  EXPECT_TRUE(flags.learned.unit.start_bias.has_value());
  EXPECT_EQ(flags.learned.unit.start_bias_or_default(), 6);
}

}  // namespace
}  // namespace devplace
