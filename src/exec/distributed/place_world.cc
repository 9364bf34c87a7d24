#include "exec/distributed/place_world.h"

#include <exception>
#include <memory>

#include "cluster/cluster_json.h"
#include "exec/distributed/chain_exchange.h"
#include "exec/distributed/controller_groups.h"
#include "exec/distributed/evaluation.h"
#include "exec/distributed/store_ranks.h"
#include "exec/distributed/world.h"
#include "graph/graph_json.h"
#include "util/error.h"
#include "util/files.h"

namespace devplace {
namespace {

std::string EndKey(int32_t controller) { return "controllers/end/" + std::to_string(controller); }

// The world and a controller's pool, owned by every copy of the factory:
// the pool's end (stop, or failed while an exception unwinds) goes to its
// workers when the run's options go. Under --controllers the store lives in
// rank 0's process: each other controller says when its workers have read
// their stop, and rank 0 waits for that (at most the timeout) before it may
// end, so no worker finds the store gone.
struct Controller {
  std::unique_ptr<World> world;
  std::unique_ptr<EvaluationPool> pool;
  std::unique_ptr<StoreRanks> ranks;  // the controllers' side, under --controllers over 1
  ~Controller() {
    const bool failing = std::uncaught_exceptions() > 0;
    pool.reset();
    if (!ranks || failing) return;
    try {
      if (ranks->rank() != 0) {
        world->Put(EndKey(ranks->rank()), "");
        return;
      }
      for (int32_t c = 1; c < ranks->size(); ++c) world->Take(EndKey(c), world->timeout_s());
    } catch (const std::exception&) {
      // A store already gone: the other ranks say so themselves.
    }
  }
};

}  // namespace

std::string DeviceKindsOf(const Cluster& cluster) {
  std::string kinds;
  for (const Device& device : cluster.devices) {
    kinds += (kinds.empty() ? "" : ", ") + std::string(device.kind == DeviceKind::kCpu ? "cpu" : "gpu");
  }
  const int32_t n = cluster.num_devices();
  return std::to_string(n) + (n == 1 ? " device" : " devices") + (kinds.empty() ? "" : ": " + kinds);
}

std::vector<WorldFact> WorldFactsOf(const PlaceWorldInputs& inputs) {
  const bool measured = inputs.reward == "measured";
  // Measured, each rank runs on its own host's devices (its own --cluster):
  // they must be alike where a placement names them, by index and kind.
  WorldFact cluster = {"cluster", ClusterToJson(inputs.cluster).dump()};
  if (measured) {
    const std::string problem = inputs.cluster_problem.empty() ? "" : " (unusable here: " + inputs.cluster_problem + ")";
    cluster = {"--cluster devices", DeviceKindsOf(inputs.cluster) + problem, /*shown=*/true,
               "under --reward measured each rank measures on its own --cluster (devplace clusters --detect on its "
               "host), with rank 0's device count and kinds"};
  }
  std::vector<WorldFact> facts = {ProgramFact(),
                                  {"graph", GraphToJson(inputs.graph).dump()},
                                  cluster,
                                  {"--op-times table", inputs.op_times_path.empty() ? "" : ReadTextFile(inputs.op_times_path)},
                                  {"--method", inputs.method},
                                  {"--reward", inputs.reward},
                                  {"--seed", std::to_string(inputs.seed)},
                                  {"search budget", inputs.budget},
                                  {"--controllers", std::to_string(inputs.controllers)}};
  if (measured) facts.push_back({"measuring protocol (--measure-steps, --run-time-limit)", inputs.measure_protocol});
  return facts;
}

PlaceRank JoinPlaceWorld(const PlaceWorldInputs& inputs, EnvironmentFactory& make_environment,
                         std::function<int64_t()>* measured_by_workers, std::shared_ptr<TrainingRanks>* controllers) {
  std::optional<WorldSpec> spec = WorldSpecFromEnvironment();
  if (!spec || spec->size == 1) return PlaceRank::kAlone;
  // Before joining, so that every rank says it at once.
  const std::vector<ControllerGroup> groups = ControllerGroups(spec->size, inputs.controllers);
  std::unique_ptr<World> world = World::Join(*spec, WorldFactsOf(inputs));
  // Every rank's cluster alike, and unusable: each rank says why.
  if (inputs.reward == "measured" && !inputs.measured) throw Error(inputs.cluster_problem);
  const ControllerGroup& group = groups[static_cast<size_t>(GroupOfRank(groups, world->rank()))];
  if (world->rank() != group.controller) {
    ServeEvaluations(*world, inputs.graph, inputs.cluster, inputs.cost, inputs.measured, group.controller);
    return PlaceRank::kWorkerDone;
  }
  auto controller = std::make_shared<Controller>();
  controller->world = std::move(world);
  controller->pool = std::make_unique<EvaluationPool>(*controller->world, inputs.controller_measures, group.workers);
  if (groups.size() > 1) {
    std::vector<int32_t> members;
    for (const ControllerGroup& g : groups) members.push_back(g.controller);
    controller->ranks = std::make_unique<StoreRanks>(*controller->world, std::move(members), "controllers",
                                                     "every controller ends here");
    // The ranks keep the world (and the pool) alive as long as the trainer holds them.
    if (controllers) *controllers = std::shared_ptr<TrainingRanks>(controller, controller->ranks.get());
  }
  Environment* measured = inputs.measured;
  make_environment = [controller, measured](const Graph& graph, const Cluster& cluster, const CostModel& cost,
                                            const SimulatedEnvironmentOptions& options) -> std::unique_ptr<Environment> {
    return std::make_unique<DistributedEnvironment>(*controller->pool, graph, cluster, cost, options, measured);
  };
  if (measured_by_workers) {
    *measured_by_workers = [controller] { return controller->pool->placements_measured_by_workers(); };
  }
  return controller->world->rank() == 0 ? PlaceRank::kHead : PlaceRank::kController;
}

std::optional<ChainWorld> JoinChainWorld(const PlaceWorldInputs& inputs) {
  std::optional<WorldSpec> spec = WorldSpecFromEnvironment();
  if (!spec || spec->size == 1) return std::nullopt;
  // The peers own the world: it lives as long as the chain shares through it.
  struct OwningPeers : StoreChainPeers {
    OwningPeers(std::unique_ptr<World> w, int32_t num_ops, int64_t share_every)
        : StoreChainPeers(*w, num_ops, share_every), world(std::move(w)) {}
    std::unique_ptr<World> world;
  };
  std::unique_ptr<World> world = World::Join(*spec, WorldFactsOf(inputs));
  // Every rank's cluster alike, and unusable: each rank says why.
  if (inputs.reward == "measured" && !inputs.measured) throw Error(inputs.cluster_problem);
  ChainWorld chains;
  chains.rank = world->rank();
  chains.seed = ChainSeed(inputs.seed, world->rank());
  chains.peers = std::make_shared<OwningPeers>(std::move(world), inputs.graph.num_ops(),
                                                inputs.share_every > 0 ? inputs.share_every : kShareEveryEvaluations);
  return chains;
}

}  // namespace devplace
