// The messages rank 0 and a worker exchange: a job survives encoding, in
// both widths of device id, and a damaged one is refused, never read past.
#include "exec/distributed/evaluation_messages.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace devplace {
namespace {

EvaluationJob JobOf(std::vector<Placement> placements) {
  EvaluationJob job;
  job.batch = 7;
  job.stream = 2;
  job.first_sample = 3;
  job.options.workers = 2;
  job.options.seed = 99;
  job.placements = std::move(placements);
  return job;
}

TEST(EvaluationMessagesTest, AJobOfSmallDeviceIdsTravelsAsOneByteAnId) {
  const EvaluationJob job = JobOf({{0, 1, 255, 3}, {4, 5, 6, 7}});
  const std::string bytes = EncodeJob(job);
  const EvaluationJob wide = JobOf({{0, 1, 256, 3}, {4, 5, 6, 7}});
  // The same header, then 8 ids of one byte against 8 of four.
  EXPECT_EQ(EncodeJob(wide).size() - bytes.size(), 8u * 3);
  const EvaluationJob back = DecodeJob(bytes);
  EXPECT_EQ(back.placements, job.placements);
  EXPECT_EQ(back.batch, 7);
  EXPECT_EQ(back.stream, 2);
  EXPECT_EQ(back.first_sample, 3);
  EXPECT_EQ(back.options.workers, 2);
  EXPECT_EQ(back.options.seed, 99u);
}

TEST(EvaluationMessagesTest, IdsBeyondAByteOrNegativeTravelAsInt32s) {
  for (const Placement& p : {Placement{0, 300, 2}, Placement{0, -1, 2}, Placement{70000, 1, 2}}) {
    EXPECT_EQ(DecodeJob(EncodeJob(JobOf({p, {1, 1, 1}}))).placements, (std::vector<Placement>{p, {1, 1, 1}}));
  }
}

TEST(EvaluationMessagesTest, ADamagedJobIsRefused) {
  const std::string bytes = EncodeJob(JobOf({{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_THROW(DecodeJob(bytes.substr(0, bytes.size() - 1)), Error);
  EXPECT_THROW(DecodeJob(bytes + "x"), Error);
  EXPECT_THROW(DecodeJob(bytes.substr(0, 20)), Error);
  std::string other_width = bytes;
  other_width[12 * sizeof(int64_t)] = 3;  // the id width: neither 1 nor 4
  EXPECT_THROW(DecodeJob(other_width), Error);
  std::string huge_count = bytes;
  huge_count[5 * sizeof(int64_t) + 7] = 0x40;  // a count near 2^62
  EXPECT_THROW(DecodeJob(huge_count), Error);
}

TEST(EvaluationMessagesTest, OutcomesTravelWhole) {
  std::vector<Outcome> outcomes(2);
  outcomes[0].ok = true;
  outcomes[0].step_time_s = 0.25;
  outcomes[1].memory_overflow = 3;
  const std::vector<Outcome> back = DecodeOutcomes(EncodeOutcomes(outcomes), 2);
  EXPECT_TRUE(back[0].ok);
  EXPECT_EQ(back[0].step_time_s, 0.25);
  EXPECT_FALSE(back[1].ok);
  EXPECT_EQ(back[1].memory_overflow, 3);
  EXPECT_THROW(DecodeOutcomes(EncodeOutcomes(outcomes), 3), Error);
}

}  // namespace
}  // namespace devplace
