// A guided search's checkpoint (`place --method guided`, checkpoint.pt in
// its --out folder): where its chain stands, its random generator, and its
// proposer (the scorer's facts as JSON, its weights and optimizer as torch's
// archive bytes), sealed as learned/files/checkpoint_file.h seals a learned
// placer's, under a header of its own so that neither is taken for the
// other. Torch-free: the proposer writes and reads its own tensors.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "learned/search/guided_search.h"
#include "placers/metropolis_chain.h"

namespace devplace {

struct GuidedCheckpoint {
  ChainState chain;
  uint64_t random_state = 0;
  nlohmann::json proposer;  // the proposer's own facts
  std::string tensors;      // the proposer's torch archive
};

// Replaces the checkpoint at `path` whole (a crash leaves the old one or
// the new one).
void WriteGuidedCheckpoint(const std::string& path, const PlacementProblem& problem, const MovableUnits& movable,
                           const GuidedSearchOptions& options, const GuidedCheckpoint& checkpoint);

// The checkpoint at `path`, checked against the problem and options it must
// continue: the same graph, cluster, seed and proposer sizes, placements
// this graph and cluster can run. Throws Error naming the file and the
// problem (another method's checkpoint, another graph, a damaged file).
GuidedCheckpoint ReadGuidedCheckpoint(const std::string& path, const PlacementProblem& problem,
                                      const MovableUnits& movable, const GuidedSearchOptions& options);

// The files of a guided search's run folder, written as it goes: the
// checkpoint and the best placement now and then (GuidedRunFiles), and the
// curve (curve.csv: evaluations, seconds, the current and best step times),
// which `report --run` reads as it reads a learned placer's. Nothing when
// the folder is "".
class GuidedRunFolder {
 public:
  GuidedRunFolder(const PlacementProblem& problem, const MovableUnits& movable, const GuidedSearchOptions& options,
                  const GuidedRunFiles& files);
  ~GuidedRunFolder();

  bool enabled() const { return !files_.out_dir.empty(); }
  std::string CheckpointPath() const;
  // Whether a checkpoint is due `seconds` into the run.
  bool CheckpointDue(double seconds) const;
  // The checkpoint, and `best` (the run's best placement, at least as good
  // as the checkpoint's) where it changed since the last.
  void WriteCheckpoint(const GuidedCheckpoint& checkpoint, const Placement& best);
  // One curve row; step times in seconds, 0 where none runs.
  void AppendCurve(int64_t evaluations, double seconds, double current_s, double best_s);

 private:
  const PlacementProblem& problem_;
  const MovableUnits& movable_;
  GuidedSearchOptions options_;
  GuidedRunFiles files_;
  double last_checkpoint_s_ = 0;
  Placement written_best_;
  int curve_fd_ = -1;
};

}  // namespace devplace
