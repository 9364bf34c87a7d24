#include "exec/distributed/compare_world.h"

#include <csignal>
#include <cstdio>

#include "exec/distributed/kill_point.h"
#include "exec/distributed/world.h"
#include "util/error.h"

namespace devplace {
namespace {

std::string ResultKey(size_t index) { return "compare/result/" + std::to_string(index); }

}  // namespace

CompareWorld::CompareWorld(std::unique_ptr<World> world) : world_(std::move(world)) {
  live_.assign(static_cast<size_t>(world_->size()), true);
}

CompareWorld::~CompareWorld() = default;

int32_t CompareWorld::rank() const { return world_->rank(); }
int32_t CompareWorld::size() const { return world_->size(); }

void CompareWorld::Send(size_t index, const std::string& bytes) {
  KillPointForTests("DEVPLACE_TEST_KILL_WORKER", world_->rank(), sent_++);  // instead of its N-th result
  world_->Put(ResultKey(index), bytes);
}

std::optional<std::string> CompareWorld::Receive(size_t index, const std::string& method) {
  const int32_t from = RankOf(index);
  if (!live_[static_cast<size_t>(from)]) return std::nullopt;
  std::optional<std::string> bytes = world_->Take(ResultKey(index), world_->timeout_s());
  if (!bytes) {
    live_[static_cast<size_t>(from)] = false;
    std::fprintf(stderr,
                 "devplace: distributed run: dropped rank %d (no result for %s within %s s, DEVPLACE_DIST_TIMEOUT_S); "
                 "rank 0 runs its methods\n",
                 from, method.c_str(), ShowNumber(world_->timeout_s()).c_str());
  }
  return bytes;
}

std::unique_ptr<CompareWorld> JoinCompareWorld(const PlaceWorldInputs& inputs) {
  std::optional<WorldSpec> spec = WorldSpecFromEnvironment();
  if (!spec || spec->size == 1) return nullptr;
  return std::make_unique<CompareWorld>(World::Join(*spec, WorldFactsOf(inputs)));
}

}  // namespace devplace
