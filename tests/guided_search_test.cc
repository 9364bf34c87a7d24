// guided (learned/search/guided_search.h): mcmc's chain with moves drawn
// from a scorer learned online. Deterministic for a seed and an evaluation
// budget, never worse than where it starts, never proposing a device a unit
// cannot run on, and fitting where no baseline does.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>

#include "cluster/presets.h"
#include "learned/features/move_history.h"
#include "learned/search/guided_polish.h"
#include "learned/search/guided_search.h"
#include "learned/search/move_regressor.h"
#include "memory_cases.h"
#include "models/registry.h"
#include "placement_problem.h"
#include "placers/methods.h"
#include "sim/placement.h"
#include "util/error.h"

namespace devplace {
namespace {

using testing::Chains;
using testing::MakeSlowCpuCluster;
using testing::OwnedProblem;

TEST(GuidedSearchTest, ProposalProbabilitiesAreTheSoftmaxMixedWithTheUniformShare) {
  const std::vector<float> scores = {0.0f, 1.0f, 3.0f, -2.0f};
  const std::vector<double> p = ProposalProbabilities(scores, 0.2);
  ASSERT_EQ(p.size(), scores.size());
  EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-12);
  double softmax_total = 0;
  for (float s : scores) softmax_total += std::exp(static_cast<double>(s));
  for (size_t i = 0; i < scores.size(); ++i) {
    EXPECT_NEAR(p[i], 0.8 * std::exp(static_cast<double>(scores[i])) / softmax_total + 0.2 / 4, 1e-9) << i;
    EXPECT_GE(p[i], 0.2 / 4);
  }
  for (double q : ProposalProbabilities(scores, 1.0)) EXPECT_NEAR(q, 0.25, 1e-12);
}

// The regressor fits a relation of the features it has seen to within a
// margin: a reward that rises with the move's speed-up (feature 8) and
// falls with the target's busy share (feature 4), clipped as guided's are.
double SyntheticReward(const MoveFeatureRow& row) {
  return std::clamp(4.0 * row[8] - 3.0 * row[4] + 0.5, -5.0, 5.0);
}

MoveFeatureRow RandomRow(Random& random) {
  MoveFeatureRow row{};
  for (float& f : row) f = static_cast<float>(random.Uniform());
  row[8] = static_cast<float>(2 * random.Uniform() - 1);
  return row;
}

// A move the chain refuses for certain (out of memory from a placement
// that fits) is labelled as one that changes nothing, not with its -5;
// every other move keeps its reward, or under kAcceptedChange a loss is
// weighted by the Metropolis test's exp(reward).
TEST(GuidedSearchTest, ScreenLabelsARefusedMoveAsOneThatChangesNothing) {
  for (const GuidedScreenTarget target : {GuidedScreenTarget::kRewardUnlessRefused, GuidedScreenTarget::kAcceptedChange}) {
    EXPECT_EQ(ScreenLabel(-5, true, target), 0);
    EXPECT_EQ(ScreenLabel(2.5, false, target), 2.5);
    EXPECT_EQ(ScreenLabel(0, false, target), 0);
  }
  EXPECT_EQ(ScreenLabel(-5, true, GuidedScreenTarget::kReward), -5);
  EXPECT_EQ(ScreenLabel(-1.5, false, GuidedScreenTarget::kReward), -1.5);
  EXPECT_EQ(ScreenLabel(-1.5, false, GuidedScreenTarget::kRewardUnlessRefused), -1.5);
  EXPECT_NEAR(ScreenLabel(-1.5, false, GuidedScreenTarget::kAcceptedChange), -1.5 * std::exp(-1.5), 1e-12);
  // A loss the test takes with probability e^-4 counts for next to nothing.
  EXPECT_GT(ScreenLabel(-4, false, GuidedScreenTarget::kAcceptedChange), -0.1);
}

TEST(GuidedSearchTest, MoveRegressorLearnsASyntheticRelationToWithinAMargin) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    MoveRegressor regressor({}, seed);
    Random data(seed * 7919);
    for (int i = 0; i < 2000; ++i) {
      const MoveFeatureRow row = RandomRow(data);
      regressor.Add(row, SyntheticReward(row));
    }
    EXPECT_EQ(regressor.rows(), 2000);
    Random train(seed);
    regressor.Train(600, train);
    std::vector<MoveFeatureRow> held_out;
    double variance = 0, mean = 0;
    for (int i = 0; i < 500; ++i) held_out.push_back(RandomRow(data));
    for (const MoveFeatureRow& row : held_out) mean += SyntheticReward(row) / 500;
    for (const MoveFeatureRow& row : held_out) variance += std::pow(SyntheticReward(row) - mean, 2) / 500;
    const std::vector<float> predicted =
        regressor.Predict(std::span<const float>(held_out.front().data(), held_out.size() * kMoveFeatures));
    double error = 0;
    for (size_t i = 0; i < held_out.size(); ++i) error += std::pow(predicted[i] - SyntheticReward(held_out[i]), 2) / 500;
    // Explains at least 90 % of the variance of rows it never saw.
    EXPECT_LT(error, 0.1 * variance) << "seed " << seed << ": mse " << error << ", variance " << variance;
  }
}

TEST(GuidedSearchTest, MoveRegressorKeepsTheMostRecentRows) {
  MoveRegressorOptions options;
  options.max_rows = 10;
  MoveRegressor regressor(options, 1);
  const MoveFeatureRow zero{};
  for (int i = 0; i < 25; ++i) regressor.Add(zero, i);
  EXPECT_EQ(regressor.rows(), 10);
  // With only the last ten rows (15..24) kept, a constant fit lands near
  // their mean, far from the mean of all 25.
  Random random(1);
  regressor.Train(800, random);
  EXPECT_NEAR(regressor.Predict(zero)[0], 19.5, 2.0);
}

// A screen in a file predicts what it did before it was written; kept to
// its newest rows, a constant fit lands on their mean.
TEST(GuidedSearchTest, MoveRegressorFileRoundTripsAndKeepNewestKeepsTheNewestRows) {
  MoveRegressorOptions options;
  options.max_rows = 10;
  MoveRegressor regressor(options, 1);
  Random data(3);
  for (int i = 0; i < 25; ++i) regressor.Add(RandomRow(data), i);
  Random train(1);
  regressor.Train(50, train);
  const std::string path = ::testing::TempDir() + "/screen_round_trip.pt";
  regressor.SaveFile(path);
  MoveRegressor loaded(options, 2);
  loaded.LoadFile(path);
  EXPECT_EQ(loaded.rows(), 10);
  std::vector<float> rows;
  for (int i = 0; i < 20; ++i) {
    const MoveFeatureRow row = RandomRow(data);
    rows.insert(rows.end(), row.begin(), row.end());
  }
  EXPECT_EQ(loaded.Predict(rows), regressor.Predict(rows));
  EXPECT_THROW(loaded.LoadFile(path + ".missing"), Error);
  MoveRegressorOptions wider = options;
  wider.hidden = 16;
  MoveRegressor other(wider, 1);
  EXPECT_THROW(other.LoadFile(path), Error);

  MoveRegressor constant(options, 1);
  const MoveFeatureRow zero{};
  for (int i = 0; i < 25; ++i) constant.Add(zero, i);
  constant.KeepNewest(4);
  EXPECT_EQ(constant.rows(), 4);
  // The newest four are 21..24; the next row replaces the oldest of them.
  Random again(1);
  constant.Train(800, again);
  EXPECT_NEAR(constant.Predict(zero)[0], 22.5, 1.0);
  constant.KeepNewest(0);
  EXPECT_EQ(constant.rows(), 0);
  std::filesystem::remove(path);
}

TEST(GuidedSearchTest, MoveHistoryReadsTheLastRewardOfTheMoveAndOfTheMoveBack) {
  MoveHistory history(3, 2, 5.0);
  std::vector<float> row;
  history.Append(1, 0, 1, 10, row);
  EXPECT_EQ(row, (std::vector<float>{0, 0, 1, 0, 0}));  // never seen: the oldest age
  history.Record(1, 0, 1, 20, -2.5);
  history.Record(1, 0, 1, 30, 10.0);  // the last one counts, bounded
  history.Record(1, 1, 0, 40, 1.0);
  row.clear();
  history.Append(1, 0, 1, 30, row);
  ASSERT_EQ(row.size(), static_cast<size_t>(kMoveHistoryFeatures));
  EXPECT_EQ(row[0], 1);
  EXPECT_FLOAT_EQ(row[1], 1.0f);
  EXPECT_FLOAT_EQ(row[2], 0.0f);  // seen this very evaluation
  EXPECT_EQ(row[3], 1);
  EXPECT_FLOAT_EQ(row[4], 0.2f);  // the move back: 1.0 of 5
  row.clear();
  history.Append(2, 0, 1, 30, row);  // another unit's moves are its own
  EXPECT_EQ(row[0], 0);
  EXPECT_EQ(row[3], 0);
}

TEST(GreedyPolishTest, StartsOnceWhenItsShareOfTheBudgetIsLeft) {
  GreedyPolish none(0);
  EXPECT_FALSE(none.StartsNow(1.0));
  GreedyPolish polish(0.25);
  EXPECT_FALSE(polish.StartsNow(0.5));
  EXPECT_FALSE(polish.active());
  EXPECT_TRUE(polish.StartsNow(0.75));
  EXPECT_TRUE(polish.active());
  EXPECT_FALSE(polish.StartsNow(0.8));
  EXPECT_TRUE(polish.active());
}

// The best-scored move not tried since the last improvement; an
// improvement forgets what was tried; when every move was tried, the
// descent ends (no move, not active) until Resume, which forgets too.
TEST(GreedyPolishTest, PicksTheBestUntriedMoveAndEndsTheDescentWhenEveryOneWasTried) {
  GreedyPolish polish(0.1);
  ASSERT_TRUE(polish.StartsNow(0.95));
  const std::vector<PolishMove> moves = {{0, 1, -1}, {0, 2, -1}, {3, 1, 4}, {3, 1, -1}};
  const std::vector<float> scores = {0.5f, -1.0f, 2.0f, 1.0f};
  EXPECT_EQ(polish.Pick(moves, scores), 2u);
  polish.Record(moves[2], false);
  EXPECT_EQ(polish.Pick(moves, scores), 3u);  // the same unit and device alone is another move
  polish.Record(moves[3], false);
  polish.Record(moves[0], false);
  EXPECT_EQ(polish.Pick(moves, scores), 1u);
  polish.Record(moves[1], true);
  EXPECT_EQ(polish.Pick(moves, scores), 2u);
  for (const PolishMove& m : moves) polish.Record(m, false);
  EXPECT_TRUE(polish.active());
  EXPECT_EQ(polish.Pick(moves, scores), moves.size());
  EXPECT_FALSE(polish.active());
  EXPECT_TRUE(polish.begun());
  polish.Resume();
  EXPECT_TRUE(polish.active());
  EXPECT_EQ(polish.Pick(moves, scores), 2u);
  EXPECT_EQ(polish.descents(), 2);
  EXPECT_EQ(polish.picks(), 5);
}

// On a graph small enough that a descent tries every move long before the
// budget ends, the polish stops at each local optimum instead of repeating
// moves: its moves are far fewer than its share of the budget, and the run
// spends its whole budget, the same in every run.
TEST(GuidedSearchTest, ThePolishEndsADescentWhenEveryMoveWasTried) {
  OwnedProblem owned(MakeModel("tiny"), *MakeClusterPreset("k80x2"));
  GuidedSearchOptions options;
  options.polish_share = 0.5;
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    PlacementProblem problem = owned.get(seed);
    problem.budget.max_evaluations = 4000;
    const PlacerOutput out = PlaceGuided(problem, options);
    EXPECT_EQ(out.evaluations, 4000);
    long long moves = -1, descents = -1;
    const size_t at = out.note.find(" polish moves in ");
    ASSERT_NE(at, std::string::npos) << out.note;
    const size_t start = out.note.rfind(", ", at);
    ASSERT_EQ(std::sscanf(out.note.c_str() + start + 2, "%lld polish moves in %lld descent", &moves, &descents), 2)
        << out.note;
    EXPECT_GE(descents, 1);
    EXPECT_GT(moves, 0);
    EXPECT_LT(moves, 1000) << out.note;  // of the 2,000 the polish's share is
    EXPECT_EQ(PlaceGuided(problem, options).placement, out.placement);
  }
}

// A run's checkpoint is where it stood before its polish: continued with a
// larger budget, it is the run that had the larger budget from the start
// (whose polish comes later); its best placement file is its polished best.
TEST(GuidedSearchTest, AResumedPolishedRunEndsWhereAnUninterruptedOneDoes) {
  OwnedProblem owned(MakeModel("rnnlm"), *MakeClusterPreset("k80x4"));
  GuidedSearchOptions options;
  options.polish_share = 0.2;
  const std::string dir = ::testing::TempDir() + "/guided_polish_resume";
  std::filesystem::remove_all(dir);
  GuidedRunFiles files;
  files.out_dir = dir;
  PlacementProblem problem = owned.get(4);
  problem.budget.max_evaluations = 300;
  const PlacerOutput first = PlaceGuided(problem, options, files);
  EXPECT_EQ(LoadPlacementFile(dir + "/best_placement.json", owned.graph, owned.cluster), first.placement);
  files.resume = true;
  problem.budget.max_evaluations = 700;
  const PlacerOutput resumed = PlaceGuided(problem, options, files);
  const PlacerOutput whole = PlaceGuided(problem, options);
  EXPECT_EQ(resumed.evaluations, whole.evaluations);
  EXPECT_EQ(resumed.placement, whole.placement);
  std::filesystem::remove_all(dir);
}

// Polishing (and at infinite coldness from the start) the chain takes no
// loss: from its best, its current placement is its best at every report.
// At mcmc's coldness and without the polish it is not (the check can fail).
TEST(GuidedSearchTest, ThePolishAndAnInfinitelyColdChainStayOnTheirBest) {
  OwnedProblem owned(MakeModel("rnnlm"), *MakeClusterPreset("k80x4"));
  GuidedSearchOptions polished, frozen, plain;
  polished.polish_share = 0.5;
  plain.polish_share = 0;
  frozen.coldness = frozen.coldness_end = std::numeric_limits<double>::infinity();
  int off_best_reports[3] = {0, 0, 0};
  int polish_reports = 0;
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    const GuidedSearchOptions* designs[3] = {&polished, &frozen, &plain};
    for (int d = 0; d < 3; ++d) {
      PlacementProblem problem = owned.get(seed);
      problem.budget.max_evaluations = 1000;
      problem.progress = [&](const SearchProgress& p) {
        // The polish begins at 500 evaluations (with a return to the best).
        if (d == 0 && p.evaluations <= 500) return;
        polish_reports += d == 0;
        off_best_reports[d] += std::abs(p.current_step_time_us - p.best_step_time_us) > 1e-9 * p.best_step_time_us;
      };
      const PlacerOutput out = PlaceGuided(problem, *designs[d]);
      EXPECT_EQ(out.evaluations, 1000);
    }
  }
  EXPECT_GE(polish_reports, 8);
  EXPECT_EQ(off_best_reports[0], 0);
  EXPECT_EQ(off_best_reports[1], 0);
  EXPECT_GT(off_best_reports[2], 0);
}

// The default and the designs it was measured against (BENCHMARKS.md).
std::vector<GuidedSearchOptions> GuidedDesigns() {
  std::vector<GuidedSearchOptions> designs(7);
  // Every knob of session 4 at once: the polish, an annealed chain and
  // candidates drawn from the busiest device.
  designs[6].polish_share = 0.2;
  designs[6].coldness = 0.5;
  designs[6].coldness_end = 4;
  designs[6].busiest_share = 0.5;
  designs[4].screen_target = GuidedScreenTarget::kReward;
  designs[5].screen_target = GuidedScreenTarget::kAcceptedChange;
  designs[1].learning = GuidedLearning::kReinforce;
  designs[1].read_history = false;
  designs[1].pair_moves = false;
  designs[2].read_history = false;
  designs[2].pair_moves = false;
  designs[3].pair_moves = false;
  return designs;
}

TEST(GuidedSearchTest, SameSeedAndBudgetGiveTheSamePlacementWithOneOrTwoThreads) {
  OwnedProblem owned(Chains(6), MakeSlowCpuCluster());
  for (const GuidedSearchOptions& options : GuidedDesigns()) {
    PlacerOutput first;
    for (int threads : {1, 2}) {
      torch::set_num_threads(threads);
      PlacementProblem problem = owned.get(3);
      problem.budget.max_evaluations = 400;
      const PlacerOutput out = PlaceGuided(problem, options);
      EXPECT_EQ(out.evaluations, 400);
      if (threads == 1) {
        first = out;
        continue;
      }
      EXPECT_EQ(out.placement, first.placement);
      ASSERT_TRUE(out.result && first.result);
      EXPECT_EQ(out.result->step_time_us, first.result->step_time_us);
    }
    torch::set_num_threads(1);
  }
}

// Units whose ops only a CPU runs stay on the CPU: on a cluster of one CPU
// and GPUs, a graph with CPU-only ops ends valid, and never worse than the
// best one-shot baseline (its start).
TEST(GuidedSearchTest, NeverMovesAUnitToADeviceThatCannotRunItAndNeverEndsWorseThanItsStart) {
  Graph g = Chains(4);
  Graph cpu_only;
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    Op op = g.op(i);
    if (i % 3 == 0) op.device_kinds = MaskOf(DeviceKind::kCpu);
    cpu_only.AddOp(op);
  }
  for (const DataEdge& e : g.data_edges()) cpu_only.AddDataEdge(e.src, e.src_output, e.dst);
  cpu_only.Finalize("cpu_only");
  OwnedProblem owned(std::move(cpu_only), MakeSlowCpuCluster());
  double best_start_us = std::numeric_limits<double>::infinity();
  for (const PlacerRun& run : RunPlacers(owned.get(1), OneShotBaselineNames())) {
    if (run.result.ok()) best_start_us = std::min(best_start_us, run.result.step_time_us);
  }
  for (const GuidedSearchOptions& options : GuidedDesigns()) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      PlacementProblem problem = owned.get(seed);
      problem.budget.max_evaluations = 300;
      const PlacerOutput out = PlaceGuided(problem, options);
      for (int32_t op = 0; op < owned.graph.num_ops(); ++op) {
        const DeviceKind kind = owned.cluster.devices[out.placement[op]].kind;
        EXPECT_TRUE(owned.graph.op(op).device_kinds & MaskOf(kind)) << "op " << op << ", seed " << seed;
      }
      const SimResult r = owned.simulator.Run(out.placement);
      ASSERT_TRUE(r.ok()) << r.reason;
      EXPECT_LE(r.step_time_us, best_start_us) << "seed " << seed;
    }
  }
}

// Every one-shot baseline overflows the three 1 GB GPUs; the search must
// find a packing itself, from the start that overflows least.
TEST(GuidedSearchTest, FindsAPlacementThatFitsWhereNoBaselineDoes) {
  OwnedProblem owned(testing::PackingPuzzle(), testing::ThreeGpusOfOneGb());
  for (const PlacerRun& run : RunPlacers(owned.get(1), OneShotBaselineNames())) {
    ASSERT_TRUE(run.result.oom) << run.method << " fits: the case needs every baseline out of memory";
  }
  for (const GuidedSearchOptions& options : GuidedDesigns()) {
    int fitted = 0;
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      PlacementProblem problem = owned.get(seed);
      problem.budget.max_evaluations = 1000;
      const PlacerOutput out = PlaceGuided(problem, options);
      EXPECT_NE(out.note.find("no one-shot baseline fits"), std::string::npos) << out.note;
      fitted += owned.simulator.Run(out.placement).ok();
    }
    // Out of memory its moves are uniform draws and exchanges, no scorer:
    // every seed fits.
    EXPECT_EQ(fitted, 5) << "learning " << static_cast<int>(options.learning) << ", history "
                         << options.read_history << ", pairs " << options.pair_moves << ", screen target "
                         << static_cast<int>(options.screen_target);
  }
}

}  // namespace
}  // namespace devplace
