#include "learned/networks/attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sys/resource.h>

#include <csignal>

#include <string>
#include <tuple>
#include <vector>

#include "util/stop_request.h"

namespace devplace {
namespace {

// The formula as the 2017 policy wrote it before its attention was chunked:
// the whole [K, T, G, A] at once.
torch::Tensor DirectContext(const torch::Tensor& keys, const torch::Tensor& values, const torch::Tensor& queries,
                            const torch::Tensor& score_weight) {
  const int64_t K = queries.size(0);
  torch::Tensor scores =
      torch::linear(torch::tanh(keys.unsqueeze(1) + queries.unsqueeze(2)), score_weight.view({1, -1})).squeeze(3);
  torch::Tensor weights = torch::softmax(scores, 2);
  return torch::matmul(weights, values.expand({K, values.size(1), values.size(2)}));
}

struct Inputs {
  torch::Tensor keys, values, queries, score_weight, upstream;
  std::vector<torch::Tensor> all() const { return {keys, values, queries, score_weight}; }
};

// Random inputs; keys and values shared by every sample (batch 1, as the
// policy's encoding is) or one per sample.
Inputs RandomInputs(int64_t K, int64_t T, int64_t G, int64_t A, int64_t V, bool shared, uint64_t seed) {
  torch::manual_seed(seed);
  const int64_t kv_batch = shared ? 1 : K;
  Inputs in;
  in.keys = torch::randn({kv_batch, G, A}).requires_grad_(true);
  in.values = torch::randn({kv_batch, G, V}).requires_grad_(true);
  in.queries = torch::randn({K, T, A}).requires_grad_(true);
  in.score_weight = torch::randn({A}).requires_grad_(true);
  in.upstream = torch::randn({K, T, V});
  return in;
}

struct Result {
  torch::Tensor context;
  std::vector<torch::Tensor> grads;  // keys, values, queries, score weight
};

template <typename F>
Result Differentiate(const Inputs& in, F&& context_of) {
  Result r;
  r.context = context_of(in);
  r.grads = torch::autograd::grad({r.context}, in.all(), {in.upstream});
  return r;
}

// |a - b| at most 1e-6 of b's largest magnitude: float rounding of sums taken
// in another order, nothing more.
void ExpectClose(const torch::Tensor& a, const torch::Tensor& b, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const double scale = b.abs().max().item<double>();
  const double worst = (a - b).abs().max().item<double>();
  EXPECT_LE(worst, 1e-6 * scale) << what << ": off by " << worst << " of " << scale;
}

const char* const kNames[] = {"keys", "values", "queries", "score weight"};

TEST(AttentionTest, ChunkedContextAndGradientsEqualTheDirectFormulaForEveryChunkLength) {
  const int64_t K = 3, T = 11, G = 13, A = 8, V = 6;
  for (bool shared : {true, false}) {
    Inputs in = RandomInputs(K, T, G, A, V, shared, 7);
    Result direct = Differentiate(in, [](const Inputs& i) { return DirectContext(i.keys, i.values, i.queries, i.score_weight); });
    for (int64_t chunk : {1, 2, 4, 10, 11, 12, 100}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + (shared ? ", shared keys" : ", keys per sample"));
      Result chunked = Differentiate(in, [chunk](const Inputs& i) {
        return AttentionContext(i.keys, i.values, i.queries, i.score_weight, chunk);
      });
      ExpectClose(chunked.context, direct.context, "context");
      for (int i = 0; i < 4; ++i) ExpectClose(chunked.grads[i], direct.grads[i], kNames[i]);
    }
  }
}

// A stop asked for in the middle of an update ends it at the next chunk,
// in the forward pass or in backward: torch's autograd engine hands the
// Stopped thrown inside backward to the caller of backward() as it is, so
// the training loop can drop the step.
TEST(AttentionTest, AStopEndsTheForwardAndTheBackwardPassWithStopped) {
  Inputs in = RandomInputs(2, 9, 5, 4, 3, true, 11);
  RequestStop(SIGTERM);
  EXPECT_THROW(AttentionContext(in.keys, in.values, in.queries, in.score_weight, 2), Stopped);
  ClearStopRequest();
  torch::Tensor context = AttentionContext(in.keys, in.values, in.queries, in.score_weight, 2);
  RequestStop(SIGTERM);
  EXPECT_THROW(context.backward(in.upstream), Stopped);
  ClearStopRequest();
  // Without a stop, the same pass backpropagates.
  context = AttentionContext(in.keys, in.values, in.queries, in.score_weight, 2);
  EXPECT_NO_THROW(context.backward(in.upstream));
  EXPECT_TRUE(in.keys.grad().defined());
}

TEST(AttentionTest, OneChunkHoldingEveryStepIsBitForBitTheDirectFormula) {
  // What keeps a seed's training curve unchanged on graphs whose attention
  // fits one chunk.
  Inputs in = RandomInputs(4, 9, 9, 32, 16, /*shared=*/true, 11);
  Result direct = Differentiate(in, [](const Inputs& i) { return DirectContext(i.keys, i.values, i.queries, i.score_weight); });
  for (int64_t chunk : {9, 50, 0}) {  // 0: from the byte budget, which holds all 9 steps here
    Result chunked = Differentiate(in, [chunk](const Inputs& i) {
      return AttentionContext(i.keys, i.values, i.queries, i.score_weight, chunk);
    });
    EXPECT_TRUE(torch::equal(chunked.context, direct.context)) << "chunk " << chunk;
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(torch::equal(chunked.grads[i], direct.grads[i])) << kNames[i] << ", chunk " << chunk;
  }
}

TEST(AttentionTest, AChunkStaysWithinTheByteBudgetAndTakesAtLeastOneStep) {
  // amoebanet on 16 samples: 2,804 groups x 32 attention units.
  for (auto [K, G, A] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{16, 2804, 32}, {16, 843, 32}, {1, 10, 8}, {64, 100000, 64}}) {
    const int64_t steps = AttentionChunkSteps(K, G, A);
    EXPECT_GE(steps, 1);
    if (K * G * A * 4 <= kAttentionChunkBytes) {
      EXPECT_LE(steps * K * G * A * 4, kAttentionChunkBytes) << K << " x " << G << " x " << A;
      EXPECT_GT((steps + 1) * K * G * A * 4, kAttentionChunkBytes) << "not the largest chunk that fits";
    } else {
      EXPECT_EQ(steps, 1);
    }
  }
  EXPECT_EQ(AttentionChunkSteps(0, 0, 0), kAttentionChunkBytes / 1);  // empty: no division by zero
}

int64_t PeakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux: kilobytes
}

TEST(AttentionTest, ForwardAndBackwardNeverHoldStepsTimesUnitsTimesWidth) {
  // 16 samples attending from 256 steps to 256 units of width 32: the direct
  // formula's [K, T, G, A] is 128 MiB, and autograd holds it (and more of its
  // size) until backward. In chunks of 8 steps (4 MiB) a few chunks are
  // alive at once. (The peak only rises, so an earlier test's peak can hide
  // growth but never invent it.)
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer keeps freed blocks in quarantine instead of reusing
  // them, so every chunk's memory would count: nothing to measure there.
  GTEST_SKIP() << "peak memory is not meaningful under AddressSanitizer";
#endif
  const int64_t K = 16, T = 256, G = 256, A = 32, V = 8, chunk = 8;
  const int64_t full_bytes = K * T * G * A * 4;
  Inputs in = RandomInputs(K, T, G, A, V, /*shared=*/true, 1);
  {  // torch's and the BLAS's first-use buffers are not ours to count
    Inputs small = RandomInputs(K, chunk, G, A, V, /*shared=*/true, 2);
    torch::autograd::grad({AttentionContext(small.keys, small.values, small.queries, small.score_weight)}, small.all(),
                          {small.upstream});
  }
  const int64_t before = PeakRssBytes();
  torch::Tensor context = AttentionContext(in.keys, in.values, in.queries, in.score_weight, chunk);
  auto grads = torch::autograd::grad({context}, in.all(), {in.upstream});
  const int64_t grown = PeakRssBytes() - before;
  EXPECT_LT(grown, full_bytes / 2) << "peak grew by " << grown << " bytes";
  EXPECT_TRUE(grads[2].isfinite().all().item<bool>());
}

}  // namespace
}  // namespace devplace
