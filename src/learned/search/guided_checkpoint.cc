#include "learned/search/guided_checkpoint.h"

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "learned/files/checkpoint_facts.h"
#include "learned/files/checkpoint_file.h"
#include "learned/files/run_files.h"
#include "learned/files/run_folder.h"
#include "util/files.h"
#include "util/str_format.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace devplace {
namespace {

constexpr std::string_view kHeader = "DEVPLACE-GUIDED-CHECKPOINT 1\n";

// What a checkpoint must agree on with the run that continues it.
nlohmann::json Identity(const PlacementProblem& problem, const MovableUnits& movable, const GuidedSearchOptions& options) {
  return {{"graph", problem.graph.name},
          {"num_ops", problem.graph.num_ops()},
          {"cluster", problem.cluster.name},
          {"num_devices", problem.cluster.num_devices()},
          {"num_units", movable.units.size()},
          {"seed", problem.seed},
          {"candidate_units", options.candidate_units},
          {"hidden", options.hidden},
          {"moves_per_update", options.moves_per_update},
          {"learning", options.learning == GuidedLearning::kRegression ? "regression" : "reinforce"},
          {"read_history", options.read_history},
          {"pair_moves", options.pair_moves},
          {"screen_target", static_cast<int>(options.screen_target)}};
}

Placement ReadPlacement(const CheckpointFacts& facts, const char* key, const PlacementProblem& problem) {
  const nlohmann::json& ops = facts.Array(key);
  if (ops.size() != static_cast<size_t>(problem.graph.num_ops())) {
    facts.Fail(std::string("checkpoint's ") + key + " has " + std::to_string(ops.size()) + " ops; the graph has " +
               std::to_string(problem.graph.num_ops()));
  }
  Placement placement;
  placement.reserve(ops.size());
  for (const nlohmann::json& device : ops) {
    placement.push_back(static_cast<int32_t>(facts.IntegerOf(device, key, 0, problem.cluster.num_devices() - 1)));
  }
  if (auto why = CheckPlacement(problem.graph, problem.cluster, placement)) {
    facts.Fail(std::string("checkpoint's ") + key + " cannot run: " + *why);
  }
  return placement;
}

}  // namespace

void WriteGuidedCheckpoint(const std::string& path, const PlacementProblem& problem, const MovableUnits& movable,
                           const GuidedSearchOptions& options, const GuidedCheckpoint& checkpoint) {
  const ChainState& chain = checkpoint.chain;
  CheckpointParts parts;
  parts.facts = {{"method", "guided"},
                 {"identity", Identity(problem, movable, options)},
                 {"current", chain.current},
                 {"best", chain.best},
                 {"since_best", chain.since_best},
                 {"evaluations", chain.evaluations},
                 {"moves", chain.moves},
                 {"restarts", chain.restarts},
                 {"resumed", chain.resumed},
                 {"seconds", chain.seconds},
                 {"start_method", chain.start_method},
                 {"start_fits", chain.start_fits},
                 // As text: JSON numbers above 2^53 do not survive every reader.
                 {"random_state", std::to_string(checkpoint.random_state)},
                 {"proposer", checkpoint.proposer}};
  parts.tensors = checkpoint.tensors;
  WriteCheckpointFile(path, SealCheckpoint(parts, kHeader));
}

GuidedCheckpoint ReadGuidedCheckpoint(const std::string& path, const PlacementProblem& problem,
                                      const MovableUnits& movable, const GuidedSearchOptions& options) {
  if (!std::filesystem::exists(path)) throw Error(ForMessage(path) + ": no checkpoint to resume from");
  const std::string bytes = ReadTextFile(path);
  if (bytes.rfind(checkpoint_file::kHeader, 0) == 0) {
    throw Error(ForMessage(path) + ": is a learned placer's checkpoint (rl, hdp, gdp, mars), not a guided search's; "
                "resume it with that method, or choose another --out");
  }
  const CheckpointParts parts = UnsealCheckpoint(path, bytes, kHeader, "guided search checkpoint");
  const CheckpointFacts facts(path, parts.facts, "checkpoint");
  if (!parts.facts.is_object()) facts.Fail("checkpoint's facts are not an object");
  if (facts.String("method") != "guided") facts.Fail("checkpoint is not a guided search's");
  const nlohmann::json expected = Identity(problem, movable, options);
  const nlohmann::json& identity = facts.Object("identity");
  for (const auto& [key, value] : expected.items()) {
    if (!identity.contains(key) || identity[key] != value) {
      facts.Fail("checkpoint is of another run: its " + key + " is " +
                 (identity.contains(key) ? identity[key].dump() : std::string("missing")) + ", this run's " +
                 value.dump() + " (resume with the same graph, cluster, --seed and guided sizes)");
    }
  }
  GuidedCheckpoint checkpoint;
  ChainState& chain = checkpoint.chain;
  chain.current = ReadPlacement(facts, "current", problem);
  chain.best = ReadPlacement(facts, "best", problem);
  chain.since_best = facts.Integer("since_best", 0, INT64_MAX);
  chain.evaluations = facts.Integer("evaluations", 0, INT64_MAX);
  chain.moves = facts.Integer("moves", 0, chain.evaluations);
  chain.restarts = facts.Integer("restarts", 0, INT64_MAX);
  chain.resumed = facts.Integer("resumed", 0, INT64_MAX);
  chain.seconds = facts.Number("seconds", 0);
  chain.start_method = facts.String("start_method");
  chain.start_fits = facts.Boolean("start_fits");
  const std::string random_state = facts.String("random_state");
  try {
    size_t used = 0;
    checkpoint.random_state = std::stoull(random_state, &used);
    if (used != random_state.size()) throw std::invalid_argument(random_state);
  } catch (const std::exception&) {
    facts.Fail("checkpoint's 'random_state' is not a number");
  }
  checkpoint.proposer = facts.Object("proposer");
  checkpoint.tensors = parts.tensors;
  return checkpoint;
}

GuidedRunFolder::GuidedRunFolder(const PlacementProblem& problem, const MovableUnits& movable,
                                 const GuidedSearchOptions& options, const GuidedRunFiles& files)
    : problem_(problem), movable_(movable), options_(options), files_(files) {
  if (!enabled()) return;
  namespace fs = std::filesystem;
  fs::create_directories(files_.out_dir);
  RemoveTemporaries(files_.out_dir, /*only_this_process=*/false);
  const std::string curve = (fs::path(files_.out_dir) / run_folder::kCurve).string();
  const bool fresh = !fs::exists(curve) || fs::file_size(curve) == 0;
  curve_fd_ = ::open(curve.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (curve_fd_ < 0) FailedWrite(curve, errno);
  if (fresh) WriteFully(curve_fd_, "step,seconds,samples,mean_step_time_s,best_step_time_s\n", curve);
}

GuidedRunFolder::~GuidedRunFolder() {
  if (curve_fd_ >= 0) ::close(curve_fd_);
  if (enabled()) RemoveTemporaries(files_.out_dir, /*only_this_process=*/true);
}

std::string GuidedRunFolder::CheckpointPath() const {
  return (std::filesystem::path(files_.out_dir) / run_folder::kCheckpoint).string();
}

bool GuidedRunFolder::CheckpointDue(double seconds) const {
  return enabled() && files_.checkpoint_seconds > 0 && seconds - last_checkpoint_s_ >= files_.checkpoint_seconds;
}

void GuidedRunFolder::WriteCheckpoint(const GuidedCheckpoint& checkpoint, const Placement& best) {
  if (!enabled()) return;
  last_checkpoint_s_ = checkpoint.chain.seconds;
  // The placement first: a checkpoint never names a best the folder lacks.
  if (best != written_best_) {
    SavePlacementFile((std::filesystem::path(files_.out_dir) / run_folder::kBestPlacement).string(), problem_.graph,
                      problem_.cluster, best);
    written_best_ = best;
  }
  WriteGuidedCheckpoint(CheckpointPath(), problem_, movable_, options_, checkpoint);
}

void GuidedRunFolder::AppendCurve(int64_t evaluations, double seconds, double current_s, double best_s) {
  if (curve_fd_ < 0) return;
  // The evaluations are both the curve's step and its samples.
  const std::string row = StrFormat("%lld,%.3f,%lld,%.9g,%.9g\n", static_cast<long long>(evaluations), seconds,
                                    static_cast<long long>(evaluations), current_s, best_s);
  WriteFully(curve_fd_, row, (std::filesystem::path(files_.out_dir) / run_folder::kCurve).string());
}

}  // namespace devplace
