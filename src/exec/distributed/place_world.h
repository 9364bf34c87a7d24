// `devplace place` across processes: the one call the place command makes.
// Under RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT every rank joins the
// world with the same command; rank 0 runs the method and writes every
// output, and a learned method's batches are measured across the ranks
// (exec/distributed/evaluation.h); the other ranks measure what rank 0
// sends, then end without output. Torch-free header.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/environment.h"

namespace devplace {

struct PlaceWorldInputs {
  const Graph& graph;
  const Cluster& cluster;
  const CostModel& cost;
  // What else every rank must agree on: compared by checksum at the start.
  std::string method;
  std::string reward;
  std::string op_times_path;  // its contents are compared; "" for none
  uint64_t seed = 0;
  // The search's budget in words (mcmc's and guided's chains must spend
  // the same to meet at every share): compared too.
  std::string budget;
  // --reward measured: this rank's real runs, on the devices of its own
  // --cluster (each rank's `clusters --detect` file, on its own host); the
  // ranks then compare only their clusters' device count and kinds, and
  // `measure_protocol` (steps, time limit). Null under --reward simulated.
  Environment* measured = nullptr;
  std::string measure_protocol;
  // --reward measured: why this rank's --cluster cannot run here (not this
  // host's devices), "" when it can; `measured` is then null. Shown with
  // its device kinds, so a rank given another host's file is named in one
  // line on every rank.
  std::string cluster_problem;
  // mcmc's and guided's chains: evaluations between shares, 0 for
  // kShareEveryEvaluations (compared as part of `budget`).
  int64_t share_every = 0;
  // A learned method's batches: whether rank 0 measures a share of each
  // (--controller-measures); only the controllers read it.
  bool controller_measures = true;
  // A learned method: controllers sharing the parameters (--controllers),
  // each the first rank of a group of contiguous ranks
  // (exec/distributed/controller_groups.h); compared at the start.
  int32_t controllers = 1;
};

struct WorldFact;  // exec/distributed/world.h

// What every rank of a command's world must agree on, by checksum: the
// program, the graph, the cluster (under --reward measured: its device
// count and kinds, shown, and the measuring protocol), the --op-times
// table, the method, the reward, the seed, the budget.
std::vector<WorldFact> WorldFactsOf(const PlaceWorldInputs& inputs);

// "2 devices: cpu, gpu": what ranks measuring on their own devices must
// have alike.
std::string DeviceKindsOf(const Cluster& cluster);

// What this process is in a learned method's world.
enum class PlaceRank {
  kAlone,       // no world (or WORLD_SIZE=1): one process, nothing changed
  kHead,        // rank 0: runs the method and writes every output
  kController,  // the first rank of another group (--controllers): trains, writes nothing
  kWorkerDone,  // a worker: measured until its controller said stop; the command is done
};

class TrainingRanks;  // learned/training/training_ranks.h

// Without the variables (or WORLD_SIZE=1): kAlone, nothing changed. A
// controller (rank 0, the head, and under --controllers the first rank of
// each other group): joins, sets `make_environment` to measure across its
// group's ranks (the world ends, telling its workers to stop, when the last
// copy of it goes), sets `measured_by_workers` (when given) to count the
// placements its workers answered for, and under --controllers over 1 sets
// `controllers` to the controllers' side of the parameter store (their
// gradients' sums, rank 0's word to all, their reports to rank 0). A
// worker: joins, measures until its controller says stop, and returns
// kWorkerDone. Throws Error on any rank for the world's faults (World::Join,
// a lost controller, --controllers over WORLD_SIZE). Under --reward
// calibrated the workers simulate (with the calibrated cost model) and the
// controllers alone run placements for real.
PlaceRank JoinPlaceWorld(const PlaceWorldInputs& inputs, EnvironmentFactory& make_environment,
                         std::function<int64_t()>* measured_by_workers = nullptr,
                         std::shared_ptr<TrainingRanks>* controllers = nullptr);

class ChainPeers;  // placers/chain_peers.h

// A local search's chains across processes (mcmc, guided): every rank runs
// its own chain, seeded by ChainSeed(seed, rank), sharing its best with the
// others through `peers`; rank 0 ends with the best of all and writes every
// output, the other ranks write nothing.
struct ChainWorld {
  int32_t rank = 0;
  uint64_t seed = 0;  // this rank's chain's
  std::shared_ptr<ChainPeers> peers;
};

// Without the variables (or WORLD_SIZE=1): nullopt, nothing changed.
// Else joins (throwing Error for the world's faults, as JoinPlaceWorld) and
// returns this rank's chain's part.
std::optional<ChainWorld> JoinChainWorld(const PlaceWorldInputs& inputs);

}  // namespace devplace
