#include "exec/distributed/place_world.h"

#include <memory>

#include "cluster/cluster_json.h"
#include "exec/distributed/chain_exchange.h"
#include "exec/distributed/evaluation.h"
#include "exec/distributed/world.h"
#include "graph/graph_json.h"
#include "util/error.h"
#include "util/files.h"

namespace devplace {
namespace {

// The world and rank 0's pool, owned by every copy of the factory: the
// pool's end (stop, or failed while an exception unwinds) goes to the
// workers when the run's options go.
struct Controller {
  std::unique_ptr<World> world;
  std::unique_ptr<EvaluationPool> pool;
  ~Controller() { pool.reset(); }
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
                                  {"search budget", inputs.budget}};
  if (measured) facts.push_back({"measuring protocol (--measure-steps, --run-time-limit)", inputs.measure_protocol});
  return facts;
}

bool JoinPlaceWorld(const PlaceWorldInputs& inputs, EnvironmentFactory& make_environment,
                    std::function<int64_t()>* measured_by_workers) {
  std::optional<WorldSpec> spec = WorldSpecFromEnvironment();
  if (!spec || spec->size == 1) return false;
  std::unique_ptr<World> world = World::Join(*spec, WorldFactsOf(inputs));
  // Every rank's cluster alike, and unusable: each rank says why.
  if (inputs.reward == "measured" && !inputs.measured) throw Error(inputs.cluster_problem);
  if (world->rank() != 0) {
    ServeEvaluations(*world, inputs.graph, inputs.cluster, inputs.cost, inputs.measured);
    return true;
  }
  auto controller = std::make_shared<Controller>();
  controller->world = std::move(world);
  controller->pool = std::make_unique<EvaluationPool>(*controller->world, inputs.controller_measures);
  Environment* measured = inputs.measured;
  make_environment = [controller, measured](const Graph& graph, const Cluster& cluster, const CostModel& cost,
                                            const SimulatedEnvironmentOptions& options) -> std::unique_ptr<Environment> {
    return std::make_unique<DistributedEnvironment>(*controller->pool, graph, cluster, cost, options, measured);
  };
  if (measured_by_workers) {
    *measured_by_workers = [controller] { return controller->pool->placements_measured_by_workers(); };
  }
  return false;
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
