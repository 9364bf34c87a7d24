#include "learned/policies/unit_policy.h"

#include "util/error.h"

namespace devplace {

UnitPolicy::UnitPolicy(std::shared_ptr<const UnitDecisions> units, const LearnedOptions& options, std::string method)
    : units_(std::move(units)), options_(options), method_(std::move(method)) {}

std::vector<Decision> UnitPolicy::StartProbes() const {
  if (options_.unit.start_bias_or_default() == 0) return {};
  return units_->StartProbes();
}

void UnitPolicy::ChooseStart(const std::vector<double>& step_times_s) {
  const std::vector<Decision> probes = StartProbes();
  if (step_times_s.size() != probes.size()) {
    throw Error(method_ + "'s start: " + std::to_string(step_times_s.size()) + " probe times for " + std::to_string(probes.size()) +
                " probes");
  }
  const int32_t best = UnitDecisions::FastestProbe(step_times_s);
  torch::NoGradGuard no_grad;
  torch::Tensor start = start_placement();
  start.zero_();
  if (best < 0) return;
  const Decision& d = probes[best];
  start.scatter_(1, torch::tensor(std::vector<int64_t>(d.begin(), d.end()), torch::kInt64).view({-1, 1}), 1.0);
}

}  // namespace devplace
