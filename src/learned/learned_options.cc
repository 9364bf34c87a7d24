// Checks every learned-placer option before anything runs: one line naming
// the flag, its range and the value.
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "learned/learned_placer.h"
#include "util/error.h"

namespace devplace {
namespace {

void RequireNumber(double value, double min, double max, const char* flag) {
  if (std::isfinite(value) && value >= min && value <= max) return;
  throw Error(std::string(flag) + " must be a number from " + ShowNumber(min) + " to " + ShowNumber(max) + ", got " + ShowNumber(value));
}

void RequirePositive(double value, double max, const char* flag) {
  if (std::isfinite(value) && value > 0 && value <= max) return;
  throw Error(std::string(flag) + " must be a number above 0 and at most " + ShowNumber(max) + ", got " + ShowNumber(value));
}

void RequireCount(int64_t value, int64_t min, int64_t max, const char* flag) {
  if (value >= min && value <= max) return;
  throw Error(std::string(flag) + " must be an integer from " + std::to_string(min) + " to " + std::to_string(max) +
              ", got " + std::to_string(value));
}


void RequireOneOf(const std::string& value, std::initializer_list<const char*> allowed, const char* flag) {
  std::string names;
  for (const char* name : allowed) {
    if (value == name) return;
    names += std::string(names.empty() ? "" : " or ") + name;
  }
  throw Error(std::string(flag) + " must be " + names + ", got '" + ForMessage(value) + "'");
}

}  // namespace

void ValidateLearnedOptions(const LearnedOptions& o) {
  RequireCount(o.max_steps, 0, INT64_MAX, "--max-steps");
  RequireNumber(o.max_seconds, 0, 1e9, "--max-seconds");
  RequireCount(o.max_samples, 0, INT64_MAX, "--max-samples");
  RequireCount(o.samples_per_step, 1, 1024, "--samples-per-step");
  RequireCount(o.controllers, 1, 64, "--controllers");
  RequireCount(o.worker_threads, 0, 256, "--workers");
  // Past these bounds the policy's float arithmetic overflows into NaN
  // (C * tanh(x / T) with T near 0, a bonus or noise near float's range).
  RequirePositive(o.learning_rate, 1, "--learning-rate");
  RequirePositive(o.prior_learning_rate, 1, "--prior-learning-rate");
  RequireNumber(o.lr_decay, 0, 1, "--lr-decay");
  RequireNumber(o.finishing_share, 0, 0.9, "--finishing-share");
  RequireNumber(o.unfitted_share, 0, 1, "unfitted_share");
  RequireCount(o.lr_decay_every, 0, INT64_MAX, "--lr-decay-every");
  RequireCount(o.lr_decay_start, 0, INT64_MAX, "--lr-decay-start");
  RequirePositive(o.grad_clip_norm, 1e9, "--grad-clip");
  RequireNumber(o.baseline_decay, 0, 1, "--baseline-decay");
  RequireNumber(o.failing_runtime_s, 0, 1e9, "--failing-runtime");
  RequireCount(o.cutover_step, 0, INT64_MAX, "--cutover-step");
  RequireNumber(o.entropy_weight, 0, 1e6, "--entropy-weight");
  RequireNumber(o.logit_noise_std, 0, 1e3, "--logit-noise");
  RequireCount(o.logit_noise_steps, 0, INT64_MAX, "--logit-noise-steps");
  RequirePositive(o.tanh_constant, 1e3, "--tanh-constant");
  RequireNumber(o.temperature, 1e-3, 1e3, "--temperature");
  RequireNumber(o.seq2seq.stay_bias_or_default(), -100, 100, "--stay-bias");
  RequireNumber(o.hdp.slow_device_penalty.value_or(0), -100, 100, "--slow-device-penalty");
  RequireCount(o.seq2seq.encoder_hidden, 1, 4096, "--encoder-hidden");
  RequireCount(o.seq2seq.decoder_hidden, 1, 4096, "--decoder-hidden");
  if (o.seq2seq.group_order != "chain" && o.seq2seq.group_order != "topological") {
    throw Error("--group-order must be chain or topological, got '" + ForMessage(o.seq2seq.group_order) + "'");
  }
  RequireNumber(o.jitter, 0, 10, "--jitter");
  RequireNumber(o.failure_probability, 0, 1, "--failure-probability");
  RequireCount(o.measure_steps, 1, 1000, "--measure-steps");
  RequireCount(o.checkpoint_every, 0, INT64_MAX, "--checkpoint-every");
  RequireNumber(o.checkpoint_seconds, 0, 1e9, "--checkpoint-seconds");
  RequireCount(o.warm_start_steps, 0, INT64_MAX, "--warm-start-steps");
  if (!IsLearnedMethod(o.method)) throw Error("--method '" + ForMessage(o.method) + "' is not a learned method (rl, hdp or gdp)");
  RequireOneOf(o.algorithm, {"reinforce", "ppo"}, "--algorithm");
  RequireOneOf(o.baseline, {"moving-average", "batch-mean"}, "--baseline");
  if (!o.failing_signal.empty()) RequireOneOf(o.failing_signal, {"flat", "graded"}, "--failing-signal");
  RequireCount(o.ppo_epochs, 1, 100, "--ppo-epochs");
  RequireNumber(o.ppo_clip, 0.001, 10, "--ppo-clip");
  RequireCount(o.hdp.groups, 0, 4096, "--hdp-groups");
  RequireCount(o.hdp.grouper_hidden, 1, 4096, "--grouper-hidden");
  RequireNumber(o.hdp.grouper_noise_std, 0, 1e3, "--grouper-noise");
  RequireCount(o.hdp.grouper_noise_steps, 0, INT64_MAX, "--grouper-noise-steps");
  RequireNumber(o.hdp.grouper_locality, 0, 1e3, "--grouper-locality");
  RequireCount(o.gdp.network.hidden, 1, 4096, "--gdp-hidden");
  RequireCount(o.gdp.network.sage_layers, 0, 16, "--gdp-sage-layers");
  RequireCount(o.gdp.network.placer_layers, 0, 16, "--gdp-placer-layers");
  RequireCount(o.gdp.network.heads, 1, 64, "--gdp-heads");
  if (o.gdp.network.hidden % o.gdp.network.heads != 0) {
    throw Error("--gdp-hidden (" + std::to_string(o.gdp.network.hidden) + ") must be a multiple of --gdp-heads (" + std::to_string(o.gdp.network.heads) + ")");
  }
  RequireCount(o.gdp.network.segment, 1, 1 << 20, "--gdp-segment");
  if (o.gdp.network.head != "fixed" && o.gdp.network.head != "devices") {
    throw Error("--gdp-head must be fixed or devices, got '" + ForMessage(o.gdp.network.head) + "'");
  }
  if (o.gdp.network.device_scoring != "dot" && o.gdp.network.device_scoring != "mlp") {
    throw Error("--gdp-device-scoring must be dot or mlp, got '" + ForMessage(o.gdp.network.device_scoring) + "'");
  }
  RequireNumber(o.unit.start_bias_or_default(), 0, 100, "--start-bias");
  RequireCount(o.mars.hidden, 1, 4096, "--mars-hidden");
  RequireCount(o.mars.segment, 1, 1 << 20, "--mars-segment");
  RequireCount(o.mars.encoder_hidden, 1, 4096, "--mars-encoder-hidden");
  RequireCount(o.mars.encoder_layers, 1, 16, "--mars-encoder-layers");
  RequireNumber(o.unit.encoder_learning_rate, 0, 1, "--mars-encoder-learning-rate");
  RequireNumber(o.gdp.stretch_noise_std, 0, 100, "--stretch-noise");
  RequireCount(o.gdp.stretch_noise_steps, 0, INT64_MAX, "--stretch-noise-steps");
  RequireNumber(o.gdp.window_moves, 0, 1, "--window-moves");
  if (!o.policy_file.empty() && o.method != "gdp" && o.method != "mars") {
    throw Error("--policy is a policy trained by `devplace train`: it needs --method gdp or mars");
  }
  if (!o.unit.encoder_file.empty() && o.method != "mars" && o.method != "gdp") {
    throw Error("--encoder is a Mars encoder: it needs --method mars (or gdp, in GraphSAGE's place)");
  }
  if (o.fine_tune && o.policy_file.empty()) throw Error("--fine-tune fine-tunes a trained policy: give --policy");
  if (o.zero_shot && o.policy_file.empty()) throw Error("placing zero-shot (--max-steps 0) needs a trained policy: give --policy");
}

}  // namespace devplace
