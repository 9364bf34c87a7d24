// What rank 0 and a worker send each other through the world's store: a
// slice of a batch to measure (or the word to stop), and its outcomes.
// Fixed-width numbers in this machine's byte order: every rank runs the same
// build (World::Join compares the programs), on x86-64.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/environment.h"

namespace devplace {

enum class JobKind : int64_t {
  kMeasure = 1,
  kStop = 2,     // the run is over
  kFailed = 3,   // the controller stopped with an error
  kDropped = 4,  // this worker answered too late and was dropped
};

struct EvaluationJob {
  JobKind kind = JobKind::kMeasure;
  int64_t batch = 0;
  int32_t stream = 0;
  int32_t first_sample = 0;
  SimulatedEnvironmentOptions options;
  std::vector<Placement> placements;
};

std::string EncodeJob(const EvaluationJob& job);
// Throws Error on a message of the wrong shape.
EvaluationJob DecodeJob(const std::string& bytes);

std::string EncodeOutcomes(const std::vector<Outcome>& outcomes);
// Throws Error unless it holds `count` outcomes.
std::vector<Outcome> DecodeOutcomes(const std::string& bytes, size_t count);

// Store keys: the n-th message to a worker and its answer.
std::string JobKey(int32_t worker, int64_t n);
// Where a worker says it read rank 0's stop (so rank 0 may end, and its store).
std::string ByeKey(int32_t worker);
std::string ResultKey(int32_t worker, int64_t n);

}  // namespace devplace
