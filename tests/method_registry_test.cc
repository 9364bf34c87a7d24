#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "cluster/presets.h"
#include "learned/files/run_folder.h"
#include "methods/method_registry.h"
#include "methods/run_method.h"
#include "models/registry.h"
#include "util/error.h"

namespace devplace {
namespace {

TEST(MethodRegistryTest, ListsEveryPlacerAndEveryLearnedMethodOnceWithItsKind) {
  std::set<std::string> names;
  for (const MethodInfo& m : ListMethods()) {
    EXPECT_TRUE(names.insert(m.name).second) << m.name;
    EXPECT_FALSE(m.description.empty()) << m.name;
    EXPECT_EQ(m.kind == MethodKind::kLearned, m.learned != nullptr) << m.name;
    EXPECT_EQ(m.kind == MethodKind::kLearnedSearch, m.learned_search != nullptr) << m.name;
    const bool placer = m.kind == MethodKind::kBaseline || m.kind == MethodKind::kSearch;
    EXPECT_EQ(placer, m.placer != nullptr) << m.name;
  }
  for (const PlacerInfo& p : ListPlacers()) {
    const MethodInfo& m = FindMethod(p.name, {MethodKind::kBaseline, MethodKind::kSearch});
    EXPECT_EQ(m.kind, p.search ? MethodKind::kSearch : MethodKind::kBaseline) << p.name;
  }
  for (const char* learned : {"rl", "hdp", "gdp", "mars"}) {
    EXPECT_EQ(FindMethod(learned, {MethodKind::kLearned}).kind, MethodKind::kLearned) << learned;
    EXPECT_TRUE(IsLearnedMethod(learned)) << learned;
  }
  EXPECT_EQ(FindMethod("guided", {MethodKind::kLearnedSearch}).kind, MethodKind::kLearnedSearch);
  EXPECT_FALSE(IsLearnedMethod("guided"));  // it trains no policy file
  EXPECT_EQ(names.size(), ListPlacers().size() + LearnedSearchList().size() + LearnedMethodList().size());
}

TEST(MethodRegistryTest, AnUnknownNameIsAnErrorListingTheMethodsOfTheKindsAsked) {
  try {
    FindMethod("magic", {MethodKind::kBaseline, MethodKind::kSearch});
    FAIL();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("magic"), std::string::npos);
    EXPECT_NE(what.find("m_etf"), std::string::npos);
    EXPECT_NE(what.find("mcmc"), std::string::npos);
    EXPECT_EQ(what.find("hdp"), std::string::npos);
  }
  // A learned method is not found among the placers.
  EXPECT_THROW(FindMethod("rl", {MethodKind::kBaseline, MethodKind::kSearch}), Error);
  EXPECT_EQ(MethodNames({MethodKind::kLearned}), "rl, hdp, gdp, mars");
}

struct Problem {
  Graph graph = MakeModel("tiny");
  Cluster cluster = *MakeClusterPreset("k80x2");
  CostModel cost{cluster};
  Simulator simulator{graph, cluster, cost};
  PlacementProblem get() { return {graph, cluster, cost, simulator, 3}; }
};

TEST(RunMethodTest, ABaselineGivesThePlacersPlacementAndWritesItToTheOutFolder) {
  Problem p;
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "run_method_baseline";
  std::filesystem::remove_all(dir);
  LearnedOptions options;
  options.out_dir = dir.string();
  MethodOutput out = RunMethod(p.get(), FindMethod("m_etf", {MethodKind::kBaseline}), options, {});
  EXPECT_EQ(out.placement, FindPlacer("m_etf").place(p.get()).placement);
  EXPECT_TRUE(std::filesystem::exists(dir / run_folder::kBestPlacement));
  std::filesystem::remove_all(dir);
}

TEST(RunMethodTest, ASearchSpendsTheEvaluationsItIsGiven) {
  Problem p;
  LearnedOptions options;
  options.max_samples = 50;
  MethodOutput out = RunMethod(p.get(), FindMethod("mcmc", {MethodKind::kSearch}), options, {});
  EXPECT_FALSE(out.placement.empty());
  EXPECT_GT(out.samples, 0);
  EXPECT_LE(out.samples, 50);
}

TEST(RunMethodTest, ALearnedMethodWithoutTheTorchLibrarysRunnerIsAnError) {
  Problem p;
  SetLearnedRunner(nullptr);
  EXPECT_THROW(RunMethod(p.get(), FindMethod("rl", {MethodKind::kLearned}), LearnedOptions(), {}), Error);
}

TEST(RunMethodTest, ALearnedSearchWithoutTheTorchLibrarysRunnerIsAnError) {
  Problem p;
  SetLearnedSearchRunner(nullptr);
  try {
    RunMethod(p.get(), FindMethod("guided", {MethodKind::kLearnedSearch}), LearnedOptions(), {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("devplace-learn"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace devplace
