// What GDP's and Mars's policies share: a decision is a device per
// co-location unit (learned/policies/unit_decisions.h), they start from the same probes,
// and a learned bonus favours each unit's start device. A subclass brings
// the network (Begin, module, MakeSibling) and where it keeps the start.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "learned/policies/policy.h"
#include "learned/learned_placer.h"
#include "learned/policies/unit_decisions.h"

namespace devplace {

// What a unit policy holds per graph: the shared network (GdpNet, MarsNet)
// and the graph's start placement ([U, D] one-hot, all zeros until the
// start probes choose one), a parameter without gradient so that
// checkpoints and copies between controllers carry it with the network.
template <typename Net>
class NetWithStartImpl : public torch::nn::Module {
 public:
  NetWithStartImpl(Net network, int64_t units, int64_t devices) : net(register_module("net", std::move(network))) {
    start = register_parameter("start", torch::zeros({units, devices}), /*requires_grad=*/false);
  }
  Net net;
  torch::Tensor start;
};
template <typename Net>
using NetWithStart = torch::nn::ModuleHolder<NetWithStartImpl<Net>>;

class UnitPolicy : public Policy {
 public:
  // `method`: the name errors give ("GDP", "Mars").
  UnitPolicy(std::shared_ptr<const UnitDecisions> units, const LearnedOptions& options, std::string method);

  Placement ToPlacement(const Decision& decision) const override { return units_->ToPlacement(decision); }
  Decision Imitate(const Placement& placement) const override { return units_->Imitate(placement); }
  std::vector<int32_t> ChoiceOfOp() const override { return units_->features().unit_of_op; }
  // None when the start bonus is 0 (the papers' start from random weights).
  std::vector<Decision> StartProbes() const override;
  // The fastest probe that ran becomes the start; none ran: no start.
  void ChooseStart(const std::vector<double>& step_times_s) override;
  int64_t num_units() const override { return units_->num_units(); }

 protected:
  // The [U, D] one-hot start placement, a parameter of module() without
  // gradient (so checkpoints and copies between controllers carry it).
  virtual torch::Tensor start_placement() = 0;

  std::shared_ptr<const UnitDecisions> units_;
  LearnedOptions options_;

 private:
  std::string method_;
};

}  // namespace devplace
