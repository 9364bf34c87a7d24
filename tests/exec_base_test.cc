// The executor's torch-free part (dp_exec_base): this machine's cores and
// the fits `clusters --detect` makes of its copy and wake-up probes. The
// program links no torch, so a torch dependency creeping into dp_exec_base
// fails to link here.
#include <gtest/gtest.h>

#include <vector>

#include "exec/host_cpus.h"
#include "exec/probes/copy_probe.h"
#include "exec/probes/wake_probe.h"
#include "util/error.h"

namespace devplace {
namespace {

TEST(CopyProbeTest, FitRecoversLatencyAndBandwidth) {
  std::vector<CopySample> samples;
  for (int64_t bytes : {4096, 65536, 1 << 20, 16 << 20}) samples.push_back({bytes, 3.0 + bytes / 2e9 * 1e6});
  const LinkFit fit = FitLink(samples);
  EXPECT_NEAR(fit.latency_us, 3.0, 1e-6);
  EXPECT_NEAR(fit.bandwidth_bytes_per_s, 2e9, 1e3);
}

// Latency 10 us after naps up to 50 us, 80 us after 200 us and more: a
// wake-up of 70 us from 200 us idle (the first at least half-way, 45 us).
TEST(WakeProbeTest, FitFindsTheExtraLatencyAndWhereItStarts) {
  std::vector<WakeSample> samples{{1000, 82}, {10, 10}, {50, 11}, {100, 30}, {200, 79}, {2000, 80}};
  const WakeUpFit fit = FitWakeUp(samples);
  EXPECT_DOUBLE_EQ(fit.wake_up_us, 70);
  EXPECT_DOUBLE_EQ(fit.wake_up_after_idle_us, 200);
  // A core as quick after a long sleep as after a nap has no wake-up.
  const WakeUpFit none = FitWakeUp({{10, 10}, {2000, 12}});
  EXPECT_EQ(none.wake_up_us, 0);
  EXPECT_EQ(none.wake_up_after_idle_us, 0);
  EXPECT_EQ(FitWakeUp({{10, 10}}).wake_up_us, 0);
}

// One sample per idle time, in order, each a real latency (no timing
// claims: the machine's load decides the values).
TEST(WakeProbeTest, MeasuresEachIdleTime) {
  const std::vector<int32_t> cores = UsableCores();
  ASSERT_FALSE(cores.empty());
  const std::vector<int32_t> waker{cores.front()}, sleeper{cores.back()};
  const std::vector<WakeSample> samples = MeasureWakeUps(waker, sleeper, {5, 50}, 3);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].idle_us, 5);
  EXPECT_EQ(samples[1].idle_us, 50);
  for (const WakeSample& s : samples) EXPECT_GT(s.latency_us, 0);
}

TEST(HostCpusTest, SplitCoresIsDisjointAndRefusesTooMany) {
  const auto sets = SplitCores({0, 1, 2, 3, 4}, 2);
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0], (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(sets[1], (std::vector<int32_t>{3, 4}));
  EXPECT_THROW(SplitCores({0, 1}, 3), Error);
}

}  // namespace
}  // namespace devplace
