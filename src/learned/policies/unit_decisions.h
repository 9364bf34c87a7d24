// What a decision of one device per co-location unit means, and where a
// policy that makes such decisions starts: shared by GDP's and Mars's
// policies (learned/policies/gdp_policy.h, learned/policies/mars_policy.h), which differ only in the
// network that gives the units their logits.
//
// The start (ours; both papers start from random weights): before the first
// update, probes measure the units' locality order (OpFeatures::unit_position)
// cut into stretches placed round robin over the fast devices, in runs of
// several lengths, all on the fastest device, and the placements of the
// baselines that cost milliseconds (expert, METIS, MinCut, Scotch, dp_split
// and the three list schedulers); the
// fastest probe becomes the graph's start placement, and the policy adds a
// learned bonus to every unit's logit for its start device. Without it
// thousands of units placed independently start as scattered as a random
// placement, and most of a short search goes to undoing that (docs/rl.md).
// No torch here.
#pragma once

#include <cstdint>
#include <vector>

#include "placers/placer.h"
#include "learned/features/op_features.h"

namespace devplace {

class UnitDecisions {
 public:
  // Slots per fast device that the stretch probes cut the locality order
  // into (HDP's 20 groups per device).
  static constexpr int32_t kSlotsPerDevice = 20;

  // `probe_baselines`: also probe the cheap baselines' placements.
  // Throws Error when the graph has no ops or the cluster no devices.
  UnitDecisions(const PlacementProblem& problem, bool probe_baselines);

  const OpFeatures& features() const { return features_; }
  int32_t num_units() const { return features_.num_units; }
  int32_t num_devices() const { return devices_; }
  bool Allowed(int32_t unit, int32_t device) const { return allowed_[static_cast<size_t>(unit) * devices_ + device] != 0; }

  // The op-by-op placement of a device per unit; throws Error on the wrong size.
  Placement ToPlacement(const std::vector<int32_t>& decision) const;
  // Each unit on the device most of its ops have (among those it may use).
  std::vector<int32_t> Imitate(const Placement& placement) const;

  // The start probes, in a fixed order (see above).
  std::vector<std::vector<int32_t>> StartProbes() const;
  // The index of the fastest probe that ran given their step times (+inf
  // or NaN for those that did not), or -1 when none ran.
  static int32_t FastestProbe(const std::vector<double>& step_times_s);

  // The stretch of the locality order a unit falls in, of `stretches`.
  int64_t StretchOf(int32_t unit, int64_t stretches) const;
  int32_t num_fast_devices() const { return static_cast<int32_t>(fast_devices_.size()); }
  // Devices of at least half the fastest one's peak, fastest first (ties
  // in the cluster's order).
  const std::vector<int32_t>& fast_devices() const { return fast_devices_; }

 private:
  // `d` if the unit may run there, else the first device it may run on.
  int32_t RunnableOn(int32_t unit, int32_t d) const;

  OpFeatures features_;
  int32_t devices_ = 0;
  std::vector<uint8_t> allowed_;       // [unit * devices + device]
  std::vector<int32_t> fast_devices_;  // of at least half the fastest one's peak
  std::vector<Placement> baseline_placements_;
};

}  // namespace devplace
