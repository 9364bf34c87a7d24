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

std::vector<WorldFact> WorldFactsOf(const PlaceWorldInputs& inputs) {
  std::vector<WorldFact> facts = {ProgramFact(),
                                  {"graph", GraphToJson(inputs.graph).dump()},
                                  {"cluster", ClusterToJson(inputs.cluster).dump()},
                                  {"--op-times table", inputs.op_times_path.empty() ? "" : ReadTextFile(inputs.op_times_path)},
                                  {"--method", inputs.method},
                                  {"--reward", inputs.reward},
                                  {"--seed", std::to_string(inputs.seed)},
                                  {"search budget", inputs.budget}};
  return facts;
}

bool JoinPlaceWorld(const PlaceWorldInputs& inputs, EnvironmentFactory& make_environment) {
  std::optional<WorldSpec> spec = WorldSpecFromEnvironment();
  if (!spec || spec->size == 1) return false;
  if (inputs.reward != "simulated") {
    throw Error("distributed run: --reward " + ForMessage(inputs.reward) +
                " across processes is not built yet (issue 51); --reward simulated is");
  }
  std::unique_ptr<World> world = World::Join(*spec, WorldFactsOf(inputs));
  if (world->rank() != 0) {
    ServeEvaluations(*world, inputs.graph, inputs.cluster, inputs.cost);
    return true;
  }
  auto controller = std::make_shared<Controller>();
  controller->world = std::move(world);
  controller->pool = std::make_unique<EvaluationPool>(*controller->world);
  make_environment = [controller](const Graph& graph, const Cluster& cluster, const CostModel& cost,
                                  const SimulatedEnvironmentOptions& options) -> std::unique_ptr<Environment> {
    return std::make_unique<DistributedEnvironment>(*controller->pool, graph, cluster, cost, options);
  };
  return false;
}

std::optional<ChainWorld> JoinChainWorld(const PlaceWorldInputs& inputs) {
  std::optional<WorldSpec> spec = WorldSpecFromEnvironment();
  if (!spec || spec->size == 1) return std::nullopt;
  if (inputs.reward != "simulated") {
    throw Error("distributed run: --reward " + ForMessage(inputs.reward) + " with " + ForMessage(inputs.method) +
                " across processes is not built yet (issue 51); --reward simulated is");
  }
  // The peers own the world: it lives as long as the chain shares through it.
  struct OwningPeers : StoreChainPeers {
    OwningPeers(std::unique_ptr<World> w, int32_t num_ops) : StoreChainPeers(*w, num_ops), world(std::move(w)) {}
    std::unique_ptr<World> world;
  };
  std::unique_ptr<World> world = World::Join(*spec, WorldFactsOf(inputs));
  ChainWorld chains;
  chains.rank = world->rank();
  chains.seed = ChainSeed(inputs.seed, world->rank());
  chains.peers = std::make_shared<OwningPeers>(std::move(world), inputs.graph.num_ops());
  return chains;
}

}  // namespace devplace
