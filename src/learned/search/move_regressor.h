// A learned screen for candidate moves: a small network that predicts a
// move's reward from its features (learned/features/move_features.h),
// fitted by regression on every move the search has evaluated so far (a
// replay buffer of feature rows and observed rewards). Every evaluated move
// is a label, where a policy gradient learns only from how a reward differs
// from its baseline. No torch in this header.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "learned/features/move_features.h"
#include "util/random.h"

namespace torch::serialize {
class OutputArchive;
class InputArchive;
}  // namespace torch::serialize

namespace devplace {

struct MoveRegressorOptions {
  // Floats per row (move_features', and move_history's when read too).
  int32_t features = kMoveFeatures;
  int32_t hidden = 32;
  double learning_rate = 0.01;
  // Rows per training step, drawn uniformly from the buffer (all of it
  // while it holds fewer).
  int32_t batch_rows = 128;
  // Huber loss's threshold, in reward units: beyond it an error counts
  // linearly, so that the rare huge reward does not swamp the fit.
  double huber_delta = 1.0;
  // The buffer keeps the most recent rows only (the search's state drifts).
  int32_t max_rows = 4096;
};

// The tensors of the screen file at `path` (what MoveRegressor::SaveFile
// wrote), checked before any is read: the file sealed and whole, and of a
// screen of `features` and `hidden`; every problem an Error naming the file.
std::string ReadScreenFile(const std::string& path, int32_t features, int32_t hidden);

class MoveRegressor {
 public:
  // The network's first weights follow `seed`.
  MoveRegressor(const MoveRegressorOptions& options, uint64_t seed);
  ~MoveRegressor();
  MoveRegressor(const MoveRegressor&) = delete;
  MoveRegressor& operator=(const MoveRegressor&) = delete;

  // Predicted rewards of `rows` (`features` floats each), one each.
  std::vector<float> Predict(std::span<const float> rows) const;
  void Add(std::span<const float> row, double reward);
  // `steps` Adam steps on minibatches drawn from the buffer by `random`.
  // Returns the last step's loss (0 with an empty buffer).
  double Train(int32_t steps, Random& random);
  int64_t rows() const;

  // Its network, optimizer and buffer in a checkpoint's archive, and back:
  // the problem in words ("is damaged", ...), empty when it loaded.
  void Save(torch::serialize::OutputArchive& archive);
  std::string Load(torch::serialize::InputArchive& archive);

  // The same in a sealed file of its own (a screen: `place
  // --guided-screen-out`), and back; every problem an Error naming the file,
  // a screen of other sizes included.
  void SaveFile(const std::string& path);
  void LoadFile(const std::string& path);
  // Keeps the newest `rows` rows of the buffer (all of them when it holds
  // fewer), oldest first, so that the next rows replace the oldest.
  void KeepNewest(int64_t rows);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace devplace
