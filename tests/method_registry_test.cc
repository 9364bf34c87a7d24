#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "cluster/presets.h"
#include "learned/files/run_folder.h"
#include "methods/method_registry.h"
#include "methods/run_method.h"
#include "models/registry.h"
#include "util/error.h"
#include "memory_cases.h"

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

// A learned run that answers `best` (empty: nothing fitted, `closest`
// instead), having spent the samples it was given; it keeps the options
// it was given.
struct FakeLearnedRun {
  static inline Placement best, closest;
  static inline double best_step_time_s = 0;
  static inline LearnedOptions given;
  static LearnedResult Run(const PlacementProblem&, const LearnedOptions& options, const LearnedProgressCallback&) {
    given = options;
    LearnedResult result;
    result.best_placement = best;
    result.closest_placement = closest;
    result.best_step_time_s = best_step_time_s;
    // Nothing fits: it ends at unfitted_share of its budget, as the trainer does.
    result.samples = best.empty() && options.unfitted_share > 0
                         ? static_cast<int64_t>(options.unfitted_share * static_cast<double>(options.max_samples))
                         : options.max_samples;
    result.seconds = 0.01;
    return result;
  }
};

// The finishing search (issue 49): a learned method given 500 samples
// learns on 400 and mcmc's chain from its best spends the other 100; the
// answer is never slower than the learned run's best, and it says whether
// it is the chain's find. A budget of steps alone has no finishing search.
TEST(RunMethodTest, TheFinishingSearchSpendsTheRestOfTheBudgetAndNeverWorsensTheLearnedBest) {
  Problem p;
  SetLearnedRunner(&FakeLearnedRun::Run);
  int found_by_search = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    PlacementProblem problem = p.get();
    problem.seed = seed;
    // The learned run's best: a random placement that fits.
    PlacerOutput random = FindMethod("random", {MethodKind::kBaseline}).placer->place(problem);
    const SimResult learned_best = p.simulator.Run(random.placement);
    ASSERT_TRUE(learned_best.ok()) << learned_best.reason;
    FakeLearnedRun::best = random.placement;
    FakeLearnedRun::best_step_time_s = learned_best.step_time_s();
    LearnedOptions options;
    options.method = "rl";
    options.seed = seed;
    options.max_samples = 500;
    const MethodOutput out = RunMethod(problem, FindMethod("rl", {MethodKind::kLearned}), options, {});
    EXPECT_EQ(FakeLearnedRun::given.max_samples, 400);
    EXPECT_EQ(out.search_after, "mcmc");
    EXPECT_EQ(out.search_samples, 100);
    EXPECT_EQ(out.samples, 500);
    const SimResult answered = p.simulator.Run(out.placement);
    ASSERT_TRUE(answered.ok()) << answered.reason;
    EXPECT_LE(answered.step_time_us, learned_best.step_time_us) << "seed " << seed;
    EXPECT_EQ(out.from_search, out.placement != random.placement) << "seed " << seed;
    EXPECT_NE(out.note.find("from the learned run's best (100 of the 500 samples)"), std::string::npos) << out.note;
    found_by_search += out.from_search;
  }
  EXPECT_GE(found_by_search, 1);  // a random placement of tiny is far from the best

  // Steps alone, or a share of 0: the learned run has the whole budget.
  LearnedOptions steps;
  steps.method = "rl";
  steps.max_steps = 3;
  MethodOutput out = RunMethod(p.get(), FindMethod("rl", {MethodKind::kLearned}), steps, {});
  EXPECT_EQ(out.search_after, "");
  EXPECT_EQ(out.placement, FakeLearnedRun::best);
  LearnedOptions none;
  none.method = "rl";
  none.max_samples = 500;
  none.finishing_share = 0;
  out = RunMethod(p.get(), FindMethod("rl", {MethodKind::kLearned}), none, {});
  EXPECT_EQ(FakeLearnedRun::given.max_samples, 500);
  EXPECT_EQ(out.search_samples, 0);
  SetLearnedRunner(nullptr);
}

// Nothing the learned run sampled fits: the finishing search starts from
// the best of its placement nearest to fitting and the one-shot baselines,
// and answers a placement that fits.
TEST(RunMethodTest, TheFinishingSearchFindsAFitWhenTheLearnedRunFoundNone) {
  testing::OwnedProblem owned(testing::PackingPuzzle(), testing::ThreeGpusOfOneGb());
  SetLearnedRunner(&FakeLearnedRun::Run);
  FakeLearnedRun::best.clear();
  FakeLearnedRun::closest = Placement(owned.graph.num_ops(), 0);  // all on gpu:0, out of memory
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    LearnedOptions options;
    options.method = "rl";
    options.seed = seed;
    options.max_samples = 1000;
    const MethodOutput out = RunMethod(owned.get(seed), FindMethod("rl", {MethodKind::kLearned}), options, {});
    EXPECT_TRUE(out.from_search);
    EXPECT_EQ(out.samples, 1000);
    EXPECT_EQ(FakeLearnedRun::given.unfitted_share, 0.5);
    EXPECT_TRUE(owned.simulator.Run(out.placement).ok()) << "seed " << seed << ": " << out.note;
    EXPECT_NE(out.note.find("nearest to fitting"), std::string::npos) << out.note;
  }
  SetLearnedRunner(nullptr);
}

}  // namespace
}  // namespace devplace
