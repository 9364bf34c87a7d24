// GDP's parts (Zhou et al.): the GraphSAGE graph embedding.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <fstream>
#include <numeric>
#include <random>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>

#include "learned/networks/gdp_net.h"
#include "learned/policies/gdp_policy.h"
#include "learned/training/batch_trainer.h"
#include "learned/networks/graph_sage.h"
#include "learned/features/op_features.h"
#include "learned/methods.h"
#include "learned_outcome.h"
#include "placement_problem.h"
#include "placers/placer.h"
#include "test_files.h"
#include "test_util.h"
#include "util/error.h"
#include "learned/networks/segment_attention.h"
#include "learned/policies/unit_decisions.h"
#include "learned/policies/window_moves.h"
#include "learned/networks/policy_file.h"

namespace devplace {
namespace {

struct RandomGraph {
  torch::Tensor x, src, dst;
};

// `nodes` nodes with random features and each node i > 0 fed by up to
// three earlier nodes.
RandomGraph MakeRandomGraph(int64_t nodes, int64_t width, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> src, dst;
  for (int64_t v = 1; v < nodes; ++v) {
    const int64_t inputs = 1 + static_cast<int64_t>(rng() % 3);
    for (int64_t k = 0; k < inputs; ++k) {
      src.push_back(static_cast<int64_t>(rng() % v));
      dst.push_back(v);
    }
  }
  torch::manual_seed(seed);
  return {torch::randn({nodes, width}), torch::tensor(src), torch::tensor(dst)};
}

// The same graph with its nodes renumbered gives the same embeddings,
// renumbered: nothing depends on node ids or edge order.
TEST(GraphSageTest, EmbeddingsFollowARenumberingOfTheNodes) {
  torch::manual_seed(1);
  GraphSage sage(5, 8, 3);
  const RandomGraph g = MakeRandomGraph(40, 5, 7);
  const torch::Tensor h = sage->forward(g.x, g.src, g.dst);

  std::vector<int64_t> new_id(40);
  std::iota(new_id.begin(), new_id.end(), 0);
  std::shuffle(new_id.begin(), new_id.end(), std::mt19937_64(3));
  const torch::Tensor to_new = torch::tensor(new_id);
  torch::Tensor x = torch::empty_like(g.x).index_copy_(0, to_new, g.x);  // row new_id[v] = x[v]
  // The edges renumbered, and listed in reverse order.
  torch::Tensor src = to_new.index_select(0, g.src).flip(0), dst = to_new.index_select(0, g.dst).flip(0);
  const torch::Tensor renumbered = sage->forward(x, src, dst);
  EXPECT_TRUE(torch::allclose(renumbered.index_select(0, to_new), h, 1e-5, 1e-6));
}

// Every parameter gets a gradient through the max-pooling, and a node's
// embedding depends on its neighbours up to `layers` edges away only.
TEST(GraphSageTest, GradientsReachEveryLayerAndInfluenceStopsAtTheLayerCount) {
  torch::manual_seed(2);
  GraphSage sage(4, 6, 2);
  // A chain 0 -> 1 -> 2 -> 3 -> 4.
  torch::Tensor src = torch::tensor(std::vector<int64_t>{0, 1, 2, 3}), dst = torch::tensor(std::vector<int64_t>{1, 2, 3, 4});
  torch::Tensor x = torch::randn({5, 4}).requires_grad_(true);
  sage->forward(x, src, dst).select(0, 0).sum().backward();
  for (const auto& p : sage->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
  }
  // Node 0 sees nodes 1 and 2 (two layers), not 3 or 4.
  const torch::Tensor reach = x.grad().abs().sum(1);
  EXPECT_GT(reach[0].item<double>(), 0);
  EXPECT_GT(reach[2].item<double>(), 0);
  EXPECT_EQ(reach[3].item<double>(), 0);
  EXPECT_EQ(reach[4].item<double>(), 0);
}

// Which nodes' logits change when segment 0's embeddings change.
std::vector<bool> ChangedBySegmentZero(SegmentAttention& placer, int64_t nodes, int64_t segment) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  torch::Tensor x = torch::randn({nodes, placer->options().sizes.hidden});
  const torch::Tensor before = placer->forward(x);
  x.narrow(0, 0, segment).add_(1.0);
  const torch::Tensor after = placer->forward(x);
  std::vector<bool> changed(nodes);
  for (int64_t v = 0; v < nodes; ++v) changed[v] = !torch::allclose(before[v], after[v], 0, 1e-7);
  return changed;
}

// Segment recurrence: with one layer a segment sees itself and the segment
// before it, not further back; the graph context (superposition) reaches
// every node; without attention a node sees only itself.
TEST(SegmentAttentionTest, ContextReachesOneSegmentBackPerLayerAndSuperpositionReachesAll) {
  SegmentAttentionOptions o;
  o.sizes.hidden = 8;
  o.sizes.heads = 2;
  o.sizes.placer_layers = 1;
  o.sizes.segment = 4;
  o.devices = 3;
  o.sizes.superposition = false;
  torch::manual_seed(1);
  SegmentAttention one_layer(o);
  EXPECT_EQ(one_layer->forward(torch::randn({10, 8})).sizes(), (std::vector<int64_t>{10, 3}));  // a short last segment
  std::vector<bool> changed = ChangedBySegmentZero(one_layer, 12, 4);
  for (int64_t v = 0; v < 12; ++v) EXPECT_EQ(changed[v], v < 8) << v;

  o.sizes.placer_layers = 2;
  SegmentAttention two_layers(o);
  changed = ChangedBySegmentZero(two_layers, 16, 4);
  for (int64_t v = 0; v < 16; ++v) EXPECT_EQ(changed[v], v < 12) << v;

  o.sizes.placer_layers = 1;
  o.sizes.superposition = true;
  SegmentAttention superposed(o);
  changed = ChangedBySegmentZero(superposed, 12, 4);
  for (int64_t v = 0; v < 12; ++v) EXPECT_TRUE(changed[v]) << v;

  o.sizes.superposition = false;
  o.sizes.attention = false;
  SegmentAttention no_attention(o);
  changed = ChangedBySegmentZero(no_attention, 12, 4);
  for (int64_t v = 0; v < 12; ++v) EXPECT_EQ(changed[v], v < 4) << v;
}

// The memory is read without gradient (Transformer-XL): a later segment's
// loss does not reach an earlier segment's embeddings.
TEST(SegmentAttentionTest, GradientsStopAtTheSegmentMemory) {
  SegmentAttentionOptions o;
  o.sizes.hidden = 8;
  o.sizes.heads = 2;
  o.sizes.placer_layers = 1;
  o.sizes.segment = 4;
  o.devices = 2;
  o.sizes.superposition = false;
  torch::manual_seed(2);
  SegmentAttention placer(o);
  torch::Tensor x = torch::randn({8, 8}).requires_grad_(true);
  placer->forward(x).narrow(0, 4, 4).sum().backward();
  EXPECT_EQ(x.grad().narrow(0, 0, 4).abs().sum().item<double>(), 0);
  EXPECT_GT(x.grad().narrow(0, 4, 4).abs().sum().item<double>(), 0);
}

// Whether backpropagating from `out` passes an autograd node whose name
// holds `name`.
bool GraphHasNode(const torch::Tensor& out, const std::string& name) {
  std::vector<torch::autograd::Node*> stack = {out.grad_fn().get()};
  std::set<torch::autograd::Node*> seen;
  while (!stack.empty()) {
    torch::autograd::Node* node = stack.back();
    stack.pop_back();
    if (node == nullptr || !seen.insert(node).second) continue;
    if (node->name().find(name) != std::string::npos) return true;
    for (const torch::autograd::Edge& edge : node->next_edges()) stack.push_back(edge.function.get());
  }
  return false;
}

// How a pass is cut and kept changes neither the logits nor any gradient
// (the embeddings', through the segments and the superposition context,
// and every parameter's): one segment at a time (the direct formula, no
// padding), two
// segments batched per chunk with the first chunk's memory and the graph's
// short last segment padded and masked, and those chunks checkpointed
// (recomputed in the backward pass, as on large graphs). All share one set
// of weights; the loss weighs nodes unevenly so that every output's
// gradient differs.
TEST(SegmentAttentionTest, ChunkedAndCheckpointedPassesGiveTheSameLogitsAndGradients) {
  for (const bool superposition : {true, false}) {
    SegmentAttentionOptions o;
    o.sizes.hidden = 8;
    o.sizes.heads = 2;
    o.sizes.placer_layers = 3;
    o.sizes.segment = 4;
    o.devices = 3;
    o.sizes.superposition = superposition;
    torch::manual_seed(3);
    SegmentAttention direct(o), chunked(o), checkpointed(o);
    {
      torch::NoGradGuard no_grad;
      for (SegmentAttention placer : {chunked, checkpointed}) {
        auto to = placer->parameters();
        auto from = direct->parameters();
        for (size_t i = 0; i < to.size(); ++i) to[i].copy_(from[i]);
      }
    }
    direct->set_chunking(4, 1 << 30);
    chunked->set_chunking(8, 1 << 30);
    checkpointed->set_chunking(8, 0);
    const torch::Tensor input = torch::randn({14, 8});  // chunks of 8 and 6 nodes, segments of 4, 4 | 4, 2
    const torch::Tensor weights = torch::randn({14, 3});
    std::vector<torch::Tensor> logits, input_grads;
    for (SegmentAttention placer : {direct, chunked, checkpointed}) {
      torch::Tensor x = input.clone().requires_grad_(true);
      torch::Tensor out = placer->forward(x * 1.0);  // a non-leaf, as the embeddings are
      EXPECT_EQ(GraphHasNode(out, "CheckpointedChunk"), placer.get() == checkpointed.get());
      (out * weights).sum().backward();
      logits.push_back(out.detach());
      input_grads.push_back(x.grad());
    }
    EXPECT_GT(input_grads[0].abs().sum().item<double>(), 0);
    for (size_t k : {1, 2}) {
      EXPECT_TRUE(torch::allclose(logits[0], logits[k], 1e-5, 1e-6)) << superposition << " " << k;
      EXPECT_TRUE(torch::allclose(input_grads[0], input_grads[k], 1e-4, 1e-6)) << superposition << " " << k;
    }
    auto direct_parameters = direct->named_parameters();
    for (SegmentAttention placer : {chunked, checkpointed}) {
      auto parameters = placer->named_parameters();
      for (const auto& item : direct_parameters) {
        const torch::Tensor& other = parameters[item.key()].grad();
        ASSERT_TRUE(other.defined()) << item.key();
        EXPECT_TRUE(torch::allclose(item.value().grad(), other, 1e-4, 1e-6)) << item.key() << " " << superposition;
      }
    }
  }
}

// A chain of 12 ops: op 0 CPU-only, op 5 GPU-only, ops 3 and 8 in one
// co-location group.
Graph KindsGraph() {
  Graph g;
  for (int i = 0; i < 12; ++i) {
    Op op = testing::MakeOp(i, "op" + std::to_string(i), 1e6 * (i + 1), 4000);
    op.type = i % 2 ? "MatMul" : "Add";
    if (i == 0) op.device_kinds = MaskOf(DeviceKind::kCpu);
    if (i == 5) op.device_kinds = MaskOf(DeviceKind::kGpu);
    if (i == 3 || i == 8) op.colocation_group = "var";
    const int32_t index = g.AddOp(op);
    if (i > 0) g.AddDataEdge(index - 1, 0, index);
  }
  g.Finalize("kinds");
  return g;
}

// Sampled log-probabilities equal the scored ones; every sample keeps
// device kinds and co-location, window moves included.
class GdpSampleTest : public ::testing::TestWithParam<double> {};

TEST_P(GdpSampleTest, SampledLogProbabilitiesEqualScoredOnesAndConstraintsHold) {
  testing::OwnedProblem p(KindsGraph());
  LearnedOptions options;
  options.method = "gdp";
  options.gdp.network.segment = 4;  // 11 units in three segments: log-probabilities across segment boundaries
  options.gdp.window_moves = GetParam();
  torch::manual_seed(3);
  auto policy = MakePolicy(p.get(), options);
  auto pass = policy->Begin();
  torch::Generator gen = at::make_generator<at::CPUGeneratorImpl>(9);
  PolicySamples sampled = pass->Sample(16, gen, {});
  PolicySamples scored = pass->Score(sampled.decisions);
  EXPECT_TRUE(torch::allclose(sampled.log_prob, scored.log_prob.detach(), 1e-5, 1e-5));
  for (const Decision& d : sampled.decisions) {
    const Placement placement = policy->ToPlacement(d);
    EXPECT_EQ(p.cluster.devices[placement[0]].kind, DeviceKind::kCpu);
    EXPECT_EQ(p.cluster.devices[placement[5]].kind, DeviceKind::kGpu);
    EXPECT_EQ(placement[3], placement[8]);
    EXPECT_EQ(policy->ToPlacement(policy->Imitate(placement)), placement);
  }
  scored.log_prob.sum().backward();
  // Every trained parameter; the graph's start placement is a parameter
  // without gradient (it rides along in checkpoints).
  int64_t trained = 0, with_gradient = 0;
  for (const auto& parameter : policy->module().parameters()) {
    if (!parameter.requires_grad()) continue;
    ++trained;
    with_gradient += parameter.grad().defined();
  }
  EXPECT_EQ(with_gradient, trained);
  EXPECT_EQ(trained + 1, static_cast<int64_t>(policy->module().parameters().size()));
}

INSTANTIATE_TEST_SUITE_P(WindowMoves, GdpSampleTest, ::testing::Values(0.0, 0.5, 1.0));

Graph Chain(int32_t ops) {
  Graph g;
  for (int i = 0; i < ops; ++i) {
    Op op = testing::MakeOp(i, "op" + std::to_string(i), 1e6, 4000);
    op.type = "MatMul";
    const int32_t index = g.AddOp(op);
    if (i > 0) g.AddDataEdge(index - 1, 0, index);
  }
  g.Finalize("chain");
  return g;
}

// A window move puts one run of the locality order on one fast device other
// than its first unit's, of lengths from one unit to half of them; the same
// seed moves the same window; a cluster with one fast device has no moves.
TEST(WindowMovesTest, AMoveIsOneWindowOfTheLocalityOrderOnOneOtherFastDevice) {
  testing::OwnedProblem p(Chain(200), testing::MakeSlowCpuCluster());  // the CPU is slow: gpu:0 and gpu:1 are the fast devices
  const UnitDecisions units(p.get(), false);
  const WindowMoves moves(units, 0.25);
  EXPECT_EQ(moves.MovedSamples(16), 4);
  EXPECT_EQ(moves.MovedSamples(1), 0);
  const int32_t U = units.num_units();
  ASSERT_EQ(U, 200);
  std::vector<int32_t> by_position(U);
  std::iota(by_position.begin(), by_position.end(), 0);
  std::sort(by_position.begin(), by_position.end(),
            [&](int32_t a, int32_t b) { return units.features().unit_position[a] < units.features().unit_position[b]; });
  Random random(5);
  int64_t shortest = U, longest = 0;
  std::set<int32_t> targets;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int32_t> decision(U);
    for (int32_t u = 0; u < U; ++u) decision[u] = 1 + (u % 2 == 0 ? 0 : 1) * (trial % 2);  // gpu:0, or gpu:0/gpu:1 alternating
    const std::vector<int32_t> before = decision;
    moves.Apply(decision, random);
    // The moved positions: one run, all on one device.
    int64_t first = -1, last = -1;
    std::set<int32_t> devices;
    for (int32_t i = 0; i < U; ++i) {
      const int32_t u = by_position[i];
      if (decision[u] != before[u]) {
        if (first < 0) first = i;
        last = i;
      }
    }
    ASSERT_GE(first, 0) << "trial " << trial;
    // The window is [start, start + length): the run of changed positions
    // lies in it, and everything in between is on the target now.
    const int32_t target = decision[by_position[first]];
    for (int64_t i = first; i <= last; ++i) EXPECT_EQ(decision[by_position[i]], target);
    EXPECT_NE(target, 0) << "the CPU is not a fast device";
    targets.insert(target);
    shortest = std::min(shortest, last - first + 1);
    longest = std::max(longest, last - first + 1);
  }
  EXPECT_EQ(targets, (std::set<int32_t>{1, 2}));
  EXPECT_LE(shortest, 2);
  EXPECT_GT(longest, U / 4);
  EXPECT_LE(longest, U / 2);

  std::vector<int32_t> a(U, 1), b(U, 1);
  Random r1(9), r2(9);
  moves.Apply(a, r1);
  moves.Apply(b, r2);
  EXPECT_EQ(a, b);

  Cluster one_gpu = testing::MakeSlowCpuCluster();
  one_gpu.devices.pop_back();
  one_gpu.links.pop_back();
  one_gpu.links.pop_back();
  one_gpu.Finalize("one gpu");
  testing::OwnedProblem q(Chain(20), one_gpu);
  const UnitDecisions single(q.get(), false);
  EXPECT_EQ(WindowMoves(single, 1.0).MovedSamples(16), 0);
}

// With stretch noise far above the logits, the units of a stretch of the
// locality order go where the stretch's draw sends them: samples move whole
// stretches (a stretch splits only when its two best draws nearly tie);
// The start probes end with the cheap baselines' placements, so GDP's start
// is never slower than the fastest of them; --gdp-no-baseline-probes (or no
// probes at all) leaves them out.
TEST(GdpPolicyTest, StartProbesIncludeTheCheapBaselinesPlacements) {
  Graph g;
  for (int i = 0; i < 60; ++i) {
    Op op = testing::MakeOp(i, "op" + std::to_string(i), 1e6, 4000);
    op.type = "MatMul";
    const int32_t index = g.AddOp(op);
    if (i > 0) g.AddDataEdge(index - 1, 0, index);
  }
  g.Finalize("chain60");
  testing::OwnedProblem p(std::move(g));
  std::vector<Placement> baselines;
  for (const char* name : {"expert", "metis", "mincut", "scotch", "dp_split", "m_topo", "m_etf", "m_sct"}) {
    try {
      baselines.push_back(FindPlacer(name).place(p.get()).placement);
    } catch (const Error&) {
    }
  }
  ASSERT_GE(baselines.size(), 7u);  // all but the expert's place any graph on this cluster
  LearnedOptions options;
  options.method = "gdp";
  auto policy = MakePolicy(p.get(), options);
  const std::vector<Decision> probes = policy->StartProbes();
  ASSERT_EQ(probes.size(), 6 + baselines.size());  // 5 run lengths over the three GPUs, one GPU, the baselines
  for (size_t i = 0; i < baselines.size(); ++i) {
    EXPECT_EQ(policy->ToPlacement(probes[6 + i]), baselines[i]) << i;
  }
  options.unit.baseline_probes = false;
  EXPECT_EQ(MakePolicy(p.get(), options)->StartProbes().size(), 6u);
  options.unit.baseline_probes = true;
  options.unit.start_bias = 0;
  EXPECT_TRUE(MakePolicy(p.get(), options)->StartProbes().empty());
}

// after the noise's updates, choices no longer follow stretches.
TEST(GdpPolicyTest, StretchNoiseMovesWholeStretches) {
  Graph g;
  for (int i = 0; i < 600; ++i) {
    Op op = testing::MakeOp(i, "op" + std::to_string(i), 1e6, 4000);
    op.type = "MatMul";
    const int32_t index = g.AddOp(op);
    if (i > 0) g.AddDataEdge(index - 1, 0, index);
  }
  g.Finalize("chain600");
  testing::OwnedProblem p(std::move(g));
  LearnedOptions options;
  options.method = "gdp";
  options.unit.start_bias = 0;
  options.gdp.stretch_noise_std = 100;
  options.gdp.stretch_noise_steps = 10;
  torch::manual_seed(4);
  auto policy = MakePolicy(p.get(), options);
  const OpFeatures features = BuildOpFeatures(p.graph, p.cluster);
  const int64_t stretches = 20 * 3;  // 20 per fast device: the test cluster's three are equally fast
  auto pass = policy->Begin();
  torch::Generator gen = at::make_generator<at::CPUGeneratorImpl>(2);
  // The share of (sample, stretch) pairs whose units all got one device.
  auto uniform_share = [&](int64_t step) {
    SampleOptions sampling;
    sampling.step = step;
    int64_t uniform = 0, total = 0;
    std::set<Decision> distinct;
    for (const Decision& d : pass->Sample(8, gen, sampling).decisions) {
      std::map<int64_t, std::set<int32_t>> devices_of_stretch;
      for (int32_t u = 0; u < features.num_units; ++u) {
        devices_of_stretch[std::min<int64_t>(stretches - 1, static_cast<int64_t>(features.unit_position[u] * stretches))].insert(d[u]);
      }
      for (const auto& [stretch, devices] : devices_of_stretch) {
        uniform += devices.size() == 1;
        ++total;
      }
      distinct.insert(d);
    }
    EXPECT_EQ(distinct.size(), 8u);
    return static_cast<double>(uniform) / static_cast<double>(total);
  };
  EXPECT_GT(uniform_share(3), 0.9);
  EXPECT_LT(uniform_share(10), 0.1);
}


// Two heavy independent branches between a light source and sink, one of
// MatMuls and one of Conv2Ds: best split over the two GPUs.
Graph WideGraph() {
  Graph g;
  const int32_t source = g.AddOp(testing::MakeOp(0, "source", 1e3, 1000));
  std::vector<int32_t> ends;
  for (int b = 0; b < 2; ++b) {
    Op first = testing::MakeOp(1 + 2 * b, "a" + std::to_string(b), 2e8, 1000);
    Op second = testing::MakeOp(2 + 2 * b, "b" + std::to_string(b), 2e8, 1000);
    first.type = second.type = b == 0 ? "MatMul" : "Conv2D";
    const int32_t f = g.AddOp(first), s = g.AddOp(second);
    g.AddDataEdge(source, 0, f);
    g.AddDataEdge(f, 0, s);
    ends.push_back(s);
  }
  const int32_t sink = g.AddOp(testing::MakeOp(5, "sink", 1e3, 1000));
  for (int32_t e : ends) g.AddDataEdge(e, 0, sink);
  g.Finalize("wide");
  return g;
}

// A chain of five heavy ops, MatMul and Conv2D in turn, passing 4 MB tensors
// (4 ms per transfer against 0.2 ms of compute per op): best all on one GPU.
Graph ChainGraph() {
  Graph g;
  for (int i = 0; i < 5; ++i) {
    Op op = testing::MakeOp(i, "c" + std::to_string(i), 2e8, 4'000'000);
    op.type = i % 2 ? "Conv2D" : "MatMul";
    const int32_t index = g.AddOp(op);
    if (i > 0) g.AddDataEdge(index - 1, 0, index);
  }
  g.Finalize("chain");
  return g;
}

// The fastest step time of any placement on the GPUs (the CPU is ten times
// slower), by enumeration.
double BestOnGpus(testing::OwnedProblem& p) {
  const int32_t n = p.graph.num_ops();
  double best = 1e30;
  for (int32_t mask = 0; mask < (1 << n); ++mask) {
    Placement placement(n);
    for (int32_t op = 0; op < n; ++op) placement[op] = 1 + ((mask >> op) & 1);
    SimResult r = p.simulator.Run(placement);
    if (r.ok()) best = std::min(best, r.step_time_s());
  }
  return best;
}

// The step time of the most likely placement of `policy_file` on `p`.
double GreedyStepTime(testing::OwnedProblem& p, const std::string& policy_file, const LearnedOptions& base) {
  LearnedOptions options = base;
  options.policy_file = policy_file;
  auto policy = MakePolicy(p.get(), options);
  auto pass = policy->Begin();
  torch::Generator gen = at::make_generator<at::CPUGeneratorImpl>(1);
  SampleOptions greedy;
  greedy.greedy = true;
  const Placement placement = policy->ToPlacement(pass->Sample(1, gen, greedy).decisions[0]);
  SimResult r = p.simulator.Run(placement);
  return r.ok() ? r.step_time_s() : 1e30;
}

// One policy trained on two graphs whose best placements differ (the
// MatMuls and Conv2Ds apart in one, together in the other) places both at
// or next to their optimum, without start probes or window moves (the
// network alone, as the paper trains it; with half the samples moved, this
// small run ends short of the chain's optimum): no rule by op type does, so
// the network must read each op's graph. A learned outcome, asserted for 2
// of 3 seeds (tests/learned_outcome.h): the wide graph's most likely
// placement within 5% of its optimum (0.411 ms; the source or sink on the
// other GPU adds one 10 us hop, 0.422 ms; both branches on one GPU take
// 0.8 ms), the chain's at its optimum (1 ms; on the CPU, 10 ms). Measured:
// seeds 1-3 reach it under ATEN_CPU_CAPABILITY default, avx2 and avx512,
// seed 4 not.
TEST(GdpTrainerTest, BatchTrainingReachesTheBestPlacementOfTwoDifferentGraphs) {
  testing::OwnedProblem wide(WideGraph(), testing::MakeSlowCpuCluster());
  testing::OwnedProblem chain(ChainGraph(), testing::MakeSlowCpuCluster());
  const double wide_best_s = BestOnGpus(wide), chain_best_s = BestOnGpus(chain);
  // Both problems on one cluster object.
  CostModel chain_cost(wide.cluster, {}, testing::PerfectEfficiency());
  Simulator chain_simulator(chain.graph, wide.cluster, chain_cost);
  std::vector<PlacementProblem> problems = {wide.get(), {chain.graph, wide.cluster, chain_cost, chain_simulator, 0}};
  const testing::SeedOutcomes outcomes = testing::SeedsReaching(2, 3, [&](uint64_t seed) -> std::string {
    testing::TempDir dir;
    BatchTrainOptions options;
    options.learned.method = "gdp";
    options.learned.algorithm = "ppo";
    options.learned.seed = seed;
    options.learned.unit.start_bias = 0;
    options.learned.gdp.window_moves = 0;
    options.learned.gdp.network.hidden = 16;
    options.learned.gdp.network.heads = 2;
    options.learned.learning_rate = 0.002;
    options.learned.samples_per_step = 32;
    options.learned.max_steps = 75;
    options.learned.worker_threads = 1;
    options.learned.checkpoint_seconds = 0;
    options.policy_out = dir.File("policy.pt");
    BatchTrainResult result = TrainAcrossGraphs(problems, options);
    EXPECT_EQ(result.updates, 75);
    const double wide_s = GreedyStepTime(wide, options.policy_out, options.learned);
    const double chain_s = GreedyStepTime(chain, options.policy_out, options.learned);
    if (wide_s <= 1.05 * wide_best_s && std::abs(chain_s - chain_best_s) < 1e-9) return "";
    return "wide " + std::to_string(wide_s) + " s, chain " + std::to_string(chain_s) + " s";
  });
  EXPECT_GE(outcomes.reached, 2) << "optima: wide " << wide_best_s << " s, chain " << chain_best_s << " s; " << outcomes.missed;
}

// A small network for p's graph and cluster with the given start bonus.
GdpNet SmallNet(const testing::OwnedProblem& p, double start_bias) {
  GdpArchitecture a;
  a.sizes.hidden = 16;
  a.sizes.heads = 2;
  a.devices = p.cluster.num_devices();
  a.vocabulary = UnitVocabulary({&p.graph});
  return GdpNet(a, start_bias);
}

void SavePolicy(const std::string& path, GdpNet& net, const testing::OwnedProblem& p) {
  GdpPolicyFileFacts facts;
  facts.cluster_name = p.cluster.name;
  for (const Device& d : p.cluster.devices) facts.device_kinds.push_back(DeviceKindName(d.kind));
  facts.graphs = {"kinds"};
  SaveGdpPolicyFile(path, net, facts);
}

// A saved network loads with the same outputs; loading it for another
// device count, or a damaged file, is one clear Error.
TEST(GdpNetTest, PolicyFileRoundTripsAndRefusesAnotherClusterOrDamage) {
  testing::OwnedProblem p(KindsGraph());
  torch::manual_seed(5);
  GdpNet net = SmallNet(p, 1.5);
  const GdpArchitecture& a = net->architecture();
  testing::TempDir dir;
  const std::string path = dir.File("policy.pt");
  SavePolicy(path, net, p);

  GdpNet loaded = LoadGdpPolicyFile(path, p.cluster);
  const OpFeatures features = BuildOpFeatures(p.graph, p.cluster);
  const UnitInputs inputs = BuildUnitInputs(features, p.graph, p.cluster, a.vocabulary);
  const torch::Tensor start = torch::zeros({features.num_units, a.devices});
  EXPECT_TRUE(torch::equal(net->LogProbs(inputs, start, 5, 1), loaded->LogProbs(inputs, start, 5, 1)));
  EXPECT_EQ(loaded->start_bias().item<double>(), 1.5);

  Cluster two_gpus = testing::MakeTestCluster();
  two_gpus.devices.pop_back();
  two_gpus.links.clear();
  two_gpus.links.push_back({0, 1, 1e9, 0.5, -1});
  two_gpus.Finalize("two");
  try {
    LoadGdpPolicyFile(path, two_gpus);
    ADD_FAILURE() << "loaded for 2 devices";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("trained for 3 devices"), std::string::npos) << e.what();
  }
  std::string bytes = testing::ReadFile(path);
  bytes[bytes.size() / 2] ^= 0x5a;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  try {
    LoadGdpPolicyFile(path, p.cluster);
    ADD_FAILURE() << "loaded a damaged file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GDP policy file is damaged"), std::string::npos) << e.what();
  }
}

// --start-bias beside a policy file replaces the learned start bonus the
// file holds (a fine-tune told to stay nearer its start); without the flag
// the file's value stands.
TEST(GdpNetTest, AGivenStartBiasReplacesTheLoadedPolicysLearnedOne) {
  testing::OwnedProblem p(KindsGraph());
  GdpNet net = SmallNet(p, 1.5);
  testing::TempDir dir;
  const std::string path = dir.File("policy.pt");
  SavePolicy(path, net, p);

  LearnedOptions options;
  options.method = "gdp";
  options.policy_file = path;
  EXPECT_EQ(MakePolicy(p.get(), options)->prior_parameters().at(0).item<double>(), 1.5);
  options.unit.start_bias.reset();  // not given (no flag): the file's stands
  EXPECT_EQ(MakePolicy(p.get(), options)->prior_parameters().at(0).item<double>(), 1.5);
  options.unit.start_bias = 7;
  EXPECT_EQ(MakePolicy(p.get(), options)->prior_parameters().at(0).item<double>(), 7);
}

}  // namespace
}  // namespace devplace
