#include "learned/search/move_regressor.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "learned/files/checkpoint_file.h"
#include "learned/files/loaded_parameters.h"
#include "learned/networks/move_scorer_net.h"
#include "util/error.h"
#include "util/files.h"

namespace devplace {

namespace {

MoveScorerNet SeededNet(int32_t features, int32_t hidden, uint64_t seed) {
  torch::manual_seed(seed);
  return MoveScorerNet(features, hidden);
}

}  // namespace

struct MoveRegressor::Impl {
  Impl(const MoveRegressorOptions& o, uint64_t seed)
      : options(o),
        net(SeededNet(o.features, o.hidden, seed)),
        optimizer(net->parameters(), torch::optim::AdamOptions(o.learning_rate)) {}
  MoveRegressorOptions options;
  MoveScorerNet net;
  torch::optim::Adam optimizer;
  // A ring of the most recent rows and their rewards.
  std::vector<float> rows;  // `features` floats a row
  std::vector<float> rewards;
  size_t next = 0;
};

MoveRegressor::MoveRegressor(const MoveRegressorOptions& options, uint64_t seed)
    : impl_(std::make_unique<Impl>(options, seed)) {}
MoveRegressor::~MoveRegressor() = default;

std::vector<float> MoveRegressor::Predict(std::span<const float> rows) const {
  std::vector<float> out(rows.size() / impl_->options.features);
  if (out.empty()) return out;
  torch::NoGradGuard no_grad;
  const torch::Tensor p = impl_->net->forward(MoveRowsTensor(rows, impl_->options.features)).contiguous();
  std::memcpy(out.data(), p.data_ptr<float>(), out.size() * sizeof(float));
  return out;
}

void MoveRegressor::Add(std::span<const float> row, double reward) {
  Impl& m = *impl_;
  const size_t width = static_cast<size_t>(m.options.features);
  if (static_cast<int32_t>(m.rewards.size()) < m.options.max_rows) {
    m.rows.insert(m.rows.end(), row.begin(), row.begin() + width);
    m.rewards.push_back(static_cast<float>(reward));
    return;
  }
  std::copy(row.begin(), row.begin() + width, m.rows.begin() + m.next * width);
  m.rewards[m.next] = static_cast<float>(reward);
  m.next = (m.next + 1) % m.rewards.size();
}

double MoveRegressor::Train(int32_t steps, Random& random) {
  Impl& m = *impl_;
  if (m.rows.empty()) return 0;
  const size_t width = static_cast<size_t>(m.options.features);
  double last_loss = 0;
  std::vector<float> batch;
  std::vector<float> labels;
  for (int32_t s = 0; s < steps; ++s) {
    batch.clear();
    labels.clear();
    if (static_cast<int32_t>(m.rewards.size()) <= m.options.batch_rows) {
      batch = m.rows;
      labels = m.rewards;
    } else {
      for (int32_t i = 0; i < m.options.batch_rows; ++i) {
        const size_t k = random.Below(m.rewards.size());
        batch.insert(batch.end(), m.rows.begin() + k * width, m.rows.begin() + (k + 1) * width);
        labels.push_back(m.rewards[k]);
      }
    }
    const torch::Tensor target = torch::from_blob(labels.data(), {static_cast<int64_t>(labels.size())},
                                                  torch::kFloat32);
    const torch::Tensor loss = torch::nn::functional::huber_loss(
        m.net->forward(MoveRowsTensor(batch, m.options.features)), target,
        torch::nn::functional::HuberLossFuncOptions().delta(m.options.huber_delta));
    m.optimizer.zero_grad();
    loss.backward();
    m.optimizer.step();
    last_loss = loss.item<double>();
  }
  return last_loss;
}

int64_t MoveRegressor::rows() const { return static_cast<int64_t>(impl_->rewards.size()); }

void MoveRegressor::Save(torch::serialize::OutputArchive& archive) {
  Impl& m = *impl_;
  torch::serialize::OutputArchive own;
  torch::serialize::OutputArchive net;
  m.net->save(net);
  own.write("net", net);
  WriteOptimizerState(own, m.optimizer);
  own.write("rows", torch::tensor(m.rows, torch::kFloat32));
  own.write("rewards", torch::tensor(m.rewards, torch::kFloat32));
  own.write("next", torch::tensor(static_cast<int64_t>(m.next), torch::kInt64));
  archive.write("regressor", own);
}

std::string MoveRegressor::Load(torch::serialize::InputArchive& archive) {
  Impl& m = *impl_;
  const ParameterShapes shapes = ShapesOf(*m.net);
  torch::Tensor rows, rewards, next;
  try {
    torch::serialize::InputArchive own;
    archive.read("regressor", own);
    torch::serialize::InputArchive net;
    own.read("net", net);
    m.net->load(net);
    ReadOptimizerState(own, m.optimizer);
    own.read("rows", rows);
    own.read("rewards", rewards);
    own.read("next", next);
  } catch (const c10::Error&) {
    return "does not load (damaged, or of other sizes)";
  }
  if (std::string problem = LoadedParametersProblem(*m.net, shapes); !problem.empty()) return problem;
  const int64_t width = m.options.features;
  if (rows.scalar_type() != torch::kFloat32 || rewards.scalar_type() != torch::kFloat32 || next.scalar_type() != torch::kInt64 ||
      rows.dim() != 1 || rewards.dim() != 1 || next.numel() != 1 || rows.numel() != rewards.numel() * width ||
      rewards.numel() > m.options.max_rows) {
    return "buffer is damaged";
  }
  const int64_t at = next.item<int64_t>();
  if (at < 0 || (rewards.numel() > 0 && at >= rewards.numel()) || (rewards.numel() == 0 && at != 0)) return "buffer is damaged";
  m.rows.assign(rows.data_ptr<float>(), rows.data_ptr<float>() + rows.numel());
  m.rewards.assign(rewards.data_ptr<float>(), rewards.data_ptr<float>() + rewards.numel());
  m.next = static_cast<size_t>(at);
  return "";
}

namespace {

// A screen file is sealed as a checkpoint is (learned/files/checkpoint_file.h):
// a flipped byte in its rows would otherwise load as another number.
constexpr std::string_view kScreenHeader = "DEVPLACE-SCREEN 1\n";

}  // namespace

void MoveRegressor::SaveFile(const std::string& path) {
  torch::serialize::OutputArchive archive;
  Save(archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  CheckpointParts parts;
  parts.facts = {{"features", impl_->options.features}, {"hidden", impl_->options.hidden}};
  parts.tensors = bytes.str();
  WriteFileAtomically(path, SealCheckpoint(parts, kScreenHeader));
}

std::string ReadScreenFile(const std::string& path, int32_t features, int32_t hidden) {
  const std::string name = ForMessage(path);
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) throw Error(name + ": no such screen file");
  CheckpointParts parts = UnsealCheckpoint(path, ReadTextFile(path), kScreenHeader, "screen");
  auto size = [&](const char* key) -> int64_t {
    const auto at = parts.facts.find(key);
    return at != parts.facts.end() && at->is_number_integer() ? at->get<int64_t>() : -1;
  };
  if (size("features") != features || size("hidden") != hidden) {
    throw Error(name + ": a screen of " + std::to_string(size("features")) + " features and " +
                std::to_string(size("hidden")) + " hidden units, where this search's has " + std::to_string(features) +
                " and " + std::to_string(hidden));
  }
  return std::move(parts.tensors);
}

void MoveRegressor::LoadFile(const std::string& path) {
  const std::string name = ForMessage(path);
  const std::string tensors = ReadScreenFile(path, impl_->options.features, impl_->options.hidden);
  torch::serialize::InputArchive archive;
  try {
    std::istringstream in(tensors);
    archive.load_from(in);
  } catch (const c10::Error&) {
    throw Error(name + ": screen is damaged (its tensors do not load)");
  }
  if (const std::string problem = Load(archive); !problem.empty()) throw Error(name + ": screen " + problem);
}

void MoveRegressor::KeepNewest(int64_t rows) {
  Impl& m = *impl_;
  const size_t width = static_cast<size_t>(m.options.features);
  const size_t held = m.rewards.size();
  const size_t kept = std::min(held, static_cast<size_t>(std::max<int64_t>(rows, 0)));
  std::vector<float> new_rows;
  std::vector<float> new_rewards;
  new_rows.reserve(kept * width);
  new_rewards.reserve(kept);
  // Oldest first: the ring's oldest row is at `next` once it is full, at 0 before.
  for (size_t i = held - kept; i < held; ++i) {
    const size_t k = (m.next + i) % held;
    new_rows.insert(new_rows.end(), m.rows.begin() + k * width, m.rows.begin() + (k + 1) * width);
    new_rewards.push_back(m.rewards[k]);
  }
  m.rows = std::move(new_rows);
  m.rewards = std::move(new_rewards);
  m.next = 0;
}

}  // namespace devplace
