#include "exec/distributed/place_world.h"

#include <memory>

#include "cluster/cluster_json.h"
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

std::vector<WorldFact> FactsOf(const PlaceWorldInputs& inputs) {
  std::vector<WorldFact> facts = {ProgramFact(),
                                  {"graph", GraphToJson(inputs.graph).dump()},
                                  {"cluster", ClusterToJson(inputs.cluster).dump()},
                                  {"--op-times table", inputs.op_times_path.empty() ? "" : ReadTextFile(inputs.op_times_path)},
                                  {"--method", inputs.method},
                                  {"--reward", inputs.reward},
                                  {"--seed", std::to_string(inputs.seed)}};
  return facts;
}

}  // namespace

bool JoinPlaceWorld(const PlaceWorldInputs& inputs, EnvironmentFactory& make_environment) {
  std::optional<WorldSpec> spec = WorldSpecFromEnvironment();
  if (!spec || spec->size == 1) return false;
  if (inputs.reward != "simulated") {
    throw Error("distributed run: --reward " + ForMessage(inputs.reward) +
                " across processes is not built yet (issue 51); --reward simulated is");
  }
  std::unique_ptr<World> world = World::Join(*spec, FactsOf(inputs));
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

}  // namespace devplace
