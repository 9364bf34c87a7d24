// Environments that run placements for real (exec/measured_environment.h)
// and `devplace place --reward measured|calibrated` end to end. As in
// exec_test, nothing here depends on how fast this machine is.
#include <gtest/gtest.h>

#include <filesystem>

#include "cluster/cluster_json.h"
#include "cost/cost_model.h"
#include "exec/measured_environment.h"
#include "exec_fixtures.h"
#include "graph/graph_json.h"
#include "run_devplace.h"
#include "test_files.h"

namespace devplace {
namespace {

using testing::HostCluster;
using testing::MatmulChain;
using testing::RunDevplace;
using testing::TempDir;

TEST(MeasuredEnvironmentTest, RunsAPlacementByTheProtocol) {
  const Cluster cluster = HostCluster(1);
  REQUIRE_CLUSTER(cluster, 1);
  const Graph graph = MatmulChain(4, 128);
  MeasuredEnvironmentOptions options;
  options.steps = 3;
  MeasuredEnvironment environment(graph, cluster, options);
  const std::vector<Outcome> outcomes = environment.Measure({Placement(graph.num_ops(), 0), Placement(graph.num_ops(), 0)}, 0, 0);
  ASSERT_EQ(outcomes.size(), 2u);
  for (const Outcome& outcome : outcomes) {
    EXPECT_TRUE(outcome.ok);
    EXPECT_GT(outcome.step_time_s, 0);
    EXPECT_FALSE(outcome.oom());
  }
  EXPECT_EQ(environment.runs(), 2);
}

TEST(MeasuredEnvironmentTest, FailuresAreFailedPlacementsNotCrashes) {
  // Out of memory: 1 MiB per device, 256 KiB tensors.
  const Cluster small = HostCluster(1, int64_t{1} << 20);
  REQUIRE_CLUSTER(small, 1);
  const Graph chain = MatmulChain(6, 256);
  MeasuredEnvironment environment(chain, small, {});
  const RealRun oom = environment.Run(Placement(chain.num_ops(), 0));
  EXPECT_FALSE(oom.outcome.ok);
  EXPECT_TRUE(oom.outcome.oom());
  EXPECT_NE(oom.failure.find("out of memory on cpu:0"), std::string::npos) << oom.failure;

  // An invalid placement (a device the cluster does not have).
  const RealRun invalid = environment.Run(Placement(chain.num_ops(), 7));
  EXPECT_FALSE(invalid.outcome.ok);
  EXPECT_FALSE(invalid.outcome.oom());
  EXPECT_FALSE(invalid.failure.empty());

  // The time limit: a step of 1 ns cannot finish its first op in time.
  const Cluster cluster = HostCluster(1);
  const Graph graph = MatmulChain(8, 256);
  MeasuredEnvironmentOptions limited;
  limited.step_time_limit_s = 1e-9;
  MeasuredEnvironment slow(graph, cluster, limited);
  const RealRun late = slow.Run(Placement(graph.num_ops(), 0));
  EXPECT_FALSE(late.outcome.ok);
  EXPECT_FALSE(late.outcome.oom());
  EXPECT_NE(late.failure.find("time limit"), std::string::npos) << late.failure;
  // ...and the environment still runs what fits in time.
  MeasuredEnvironment fine(graph, cluster, {});
  EXPECT_TRUE(fine.MeasureOne(Placement(graph.num_ops(), 0)).ok);
}

TEST(CalibratedEnvironmentTest, SimulatesAndRunsTheBestFewForReal) {
  const Cluster cluster = HostCluster(2);
  REQUIRE_CLUSTER(cluster, 2);
  const Graph graph = MatmulChain(4, 128);
  const CostModel cost(cluster);
  MeasuredEnvironment real(graph, cluster, {});
  CalibratedEnvironmentOptions options;
  options.remeasure_every_batches = 2;
  options.remeasure_best = 2;
  CalibratedEnvironment environment(graph, cluster, cost, options, real);
  std::vector<Placement> batch;
  for (int32_t split = 0; split <= graph.num_ops(); split += 3) {
    Placement p(graph.num_ops(), 0);
    for (int32_t op = split; op < graph.num_ops(); ++op) p[op] = 1;
    batch.push_back(p);
  }
  const std::vector<Outcome> first = environment.Measure(batch, 0, 0);
  EXPECT_EQ(real.runs(), 0);  // the simulator judges every placement
  Simulator simulator(graph, cluster, cost);
  for (size_t i = 0; i < batch.size(); ++i) {
    ASSERT_TRUE(first[i].ok);
    EXPECT_DOUBLE_EQ(first[i].step_time_s, simulator.Run(batch[i]).step_time_s());
  }
  environment.Measure(batch, 1, 0);  // the second batch: the best two run for real
  ASSERT_EQ(environment.remeasured().size(), 2u);
  EXPECT_EQ(real.runs(), 2);
  double fastest = first[0].step_time_s;
  for (const Outcome& o : first) fastest = std::min(fastest, o.step_time_s);
  EXPECT_DOUBLE_EQ(environment.remeasured()[0].simulated_s, fastest);
  for (const Remeasurement& r : environment.remeasured()) {
    EXPECT_TRUE(r.real.outcome.ok) << r.real.failure;
    EXPECT_GT(r.real.outcome.step_time_s, 0);
  }
  environment.Measure(batch, 2, 0);
  environment.Measure(batch, 3, 0);  // nothing new is best: nothing runs again
  EXPECT_EQ(real.runs(), 2);
}

// End to end: a learned placer and mcmc trained on real runs of a small
// graph, on this machine as `clusters --detect` writes it.
TEST(PlaceRewardTest, MeasuredAndCalibratedEndToEnd) {
  TempDir dir;
  const std::string host = dir.File("host.json");
  ASSERT_EQ(RunDevplace("clusters --detect --no-gpus -o " + host).exit_code, 0);
  const std::string graph = dir.File("chain.json");
  SaveGraphFile(MatmulChain(6, 96), graph);

  const std::string out = dir.File("hdp");
  auto hdp = RunDevplace("place --graph " + graph + " --cluster " + host +
                         " --method hdp --reward measured --max-samples 8 --samples-per-step 4 --json --out " + out);
  ASSERT_EQ(hdp.exit_code, 0) << hdp.out;
  nlohmann::json result = nlohmann::json::parse(hdp.out);
  EXPECT_EQ(result["reward"], "measured");
  EXPECT_GT(result["step_time_s"].get<double>(), 0);
  EXPECT_EQ(result["step_time_s"], result["measured_step_time_s"]);
  EXPECT_GT(result["simulated_step_time_s"].get<double>(), 0);
  EXPECT_GE(result["real_runs"].get<int>(), 9);  // every sample, the failing-signal probe, the final run
  EXPECT_TRUE(std::filesystem::exists(out + "/curve.csv"));
  EXPECT_TRUE(std::filesystem::exists(out + "/best_placement.json"));

  auto mcmc = RunDevplace("place --graph " + graph + " --cluster " + host +
                          " --method mcmc --reward measured --max-samples 20 --json --out " + dir.File("mcmc"));
  ASSERT_EQ(mcmc.exit_code, 0) << mcmc.out;
  result = nlohmann::json::parse(mcmc.out);
  EXPECT_GT(result["measured_step_time_s"].get<double>(), 0);
  EXPECT_GT(result["real_runs"].get<int>(), 1);

  // Calibrated: op times for the chain's matmuls, from a table.
  const std::string times = dir.Write("times.json", R"({"times": [{"op_type": "MatMul", "shape": [96, 96], "device_kind": "cpu", "time_us": 50}]})");
  const std::string calibrated_out = dir.File("calibrated");
  auto calibrated = RunDevplace("place --graph " + graph + " --cluster " + host + " --op-times " + times +
                                " --method hdp --reward calibrated --max-samples 48 --samples-per-step 4 --json --out " +
                                calibrated_out);
  ASSERT_EQ(calibrated.exit_code, 0) << calibrated.out;
  result = nlohmann::json::parse(calibrated.out);
  EXPECT_EQ(result["step_time_s"], result["simulated_step_time_s"]);
  EXPECT_GT(result["measured_step_time_s"].get<double>(), 0);
  EXPECT_FALSE(result["remeasured"].empty());
  EXPECT_TRUE(std::filesystem::exists(calibrated_out + "/remeasured.json"));
}

}  // namespace
}  // namespace devplace
