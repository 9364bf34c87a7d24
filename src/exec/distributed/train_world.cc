#include "exec/distributed/train_world.h"

#include <numeric>
#include <optional>

#include "exec/distributed/store_ranks.h"
#include "exec/distributed/world.h"

namespace devplace {

std::shared_ptr<TrainingRanks> JoinTrainWorld(const std::vector<WorldFact>& facts) {
  std::optional<WorldSpec> spec = WorldSpecFromEnvironment();
  if (!spec || spec->size == 1) return nullptr;
  std::unique_ptr<World> world = World::Join(*spec, facts);
  std::vector<int32_t> every(static_cast<size_t>(world->size()));
  std::iota(every.begin(), every.end(), 0);
  auto ranks = std::make_shared<StoreRanks>(*world, std::move(every), "train",
                                            "the training ends here (--resume continues from its checkpoint)");
  ranks->Own(std::move(world));
  return ranks;
}

}  // namespace devplace
