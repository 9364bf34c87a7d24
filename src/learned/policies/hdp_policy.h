// HDP (Mirhoseini et al. 2018): a Grouper network puts every co-location
// unit of ops into one of N groups, and a Placer (the 2017 seq2seq network,
// reading group embeddings built from the sampled grouping) puts each group
// on a device. No hand-made grouping rules: the units are only the ops that
// must share a device (learned/features/op_features.h).
//
// A decision is [group of each unit (U numbers)] then [device of each group
// (N numbers)], and log p(decision) = log p(grouping) + log p(placement |
// grouping), both of the decision itself: Score recomputes the probability
// of exactly the grouping and placement given (the public TF code's loss
// differentiates a freshly resampled one instead; that is not copied).
//
// Device kinds: the Placer chooses any device for a group, unmasked, and a
// unit that cannot run on its group's device goes to the first device of the
// cluster that can run it (TensorFlow's soft placement, as
// SingleDevicePlacement does). Why not mask: a group may mix units of
// different allowed kinds, so no mask on the group can make every unit fit,
// and masking the Grouper instead would tie group ids to device kinds. The
// fallback is deterministic, so a decision still stands for one placement,
// and since a unit moves as one, co-location always holds. Ops pinned to a
// kind the cluster has one device of (the usual CPU-only op) land on that
// device whatever the Placer says.
//
// Sizes: the Grouper is per unit ([U, N] logits, one multinomial call draws
// every sample's grouping); group embeddings are built with index_add over
// the unit edge list (never a dense U x U); the Placer's attention is
// chunked (learned/networks/attention.h), so nothing holds more than N x N scores per
// sample.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "learned/policies/policy.h"
#include "learned/learned_placer.h"

namespace devplace {

// The number of groups HDP uses: options.hdp.groups, or the paper's
// min(256, 20 x devices), capped at the number of units but never below the
// number of devices.
int64_t HdpGroupCount(const LearnedOptions& options, int32_t num_devices, int64_t num_units);

// A stay bonus s with P(previous group's device) = e^s / (e^s + D - 1) =
// 1 - 1 / run_groups, so that runs of one device are about run_groups
// groups long. 0 when that probability is not above 1 / D.
double HdpStayBiasForRuns(double run_groups, int32_t num_devices);

// The Placer's stay bonus before its start is chosen: runs of N / D groups,
// so the first placements change device about D times over the N groups
// (with the locality prior, a D-stage split of the network) whatever N and
// D are.
double HdpStayBias(int64_t groups, int32_t num_devices);

// The Placer's starting penalty on the logits of slow devices (those the
// start probes leave out) once a probe showed the fast ones hold the graph:
// s with P(a slow device) = S e^-s / (F + S e^-s) = 1 / N, so a first
// placement puts about one of its N groups on a slow device. 0 without slow
// devices.
double HdpSlowDevicePenalty(int64_t groups, int32_t num_fast, int32_t num_slow);

// The run lengths, in groups, that HDP's start probes try over P devices
// when the user gave no --stay-bias: N / P, then halved while at least 2,
// then 1.
std::vector<double> HdpProbeRunLengths(int64_t groups, int32_t num_probe_devices);

// The two halves of log p(decision), [samples] each.
struct HdpLogProbs {
  torch::Tensor grouping;
  torch::Tensor placement;
};

// An HDP pass also tells the halves of the log-probabilities it last
// returned (from Sample or Score), for tests and diagnostics.
class HdpPassParts {
 public:
  virtual ~HdpPassParts() = default;
  virtual const HdpLogProbs& last_parts() const = 0;
};

// Throws Error (one line) for options out of range, a graph with no ops, or
// a co-location unit no device of the cluster can run. torch's global seed
// must be set first (the parameters start random).
std::unique_ptr<Policy> MakeHdpPolicy(const PlacementProblem& problem, const LearnedOptions& options);

}  // namespace devplace
