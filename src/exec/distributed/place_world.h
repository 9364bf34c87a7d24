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
  // (--controller-measures); only rank 0 reads it.
  bool controller_measures = true;
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

// Without the variables (or WORLD_SIZE=1): false, nothing changed. Rank 0:
// joins, sets `make_environment` to measure across the ranks (the world
// ends, telling the workers to stop, when the last copy of it goes), sets
// `measured_by_workers` (when given) to count the placements the workers
// answered for, and returns false. A worker: joins, measures until rank 0
// says stop, and returns true: the command is done. Throws Error on any
// rank for the world's faults (World::Join, a lost controller). Under
// --reward calibrated the workers simulate (with the calibrated cost
// model) and rank 0 alone runs placements for real.
bool JoinPlaceWorld(const PlaceWorldInputs& inputs, EnvironmentFactory& make_environment,
                    std::function<int64_t()>* measured_by_workers = nullptr);

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
