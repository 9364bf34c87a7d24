#include "exec/distributed/compare_world.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "exec/distributed/world.h"
#include "util/error.h"

namespace devplace {
namespace {

std::string ResultKey(size_t index) { return "compare/result/" + std::to_string(index); }

// DEVPLACE_TEST_KILL_WORKER=RANK:N: that worker sends itself SIGKILL
// instead of sending its N-th result (from 0), as evaluation.cc's workers
// do on their N-th slice: a test kills a worker mid-run with no sleep.
void KillPointForTests(int32_t rank, int64_t sent) {
  const char* spec = std::getenv("DEVPLACE_TEST_KILL_WORKER");
  if (!spec) return;
  const std::string text = spec;
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return;
  if (std::atoi(text.substr(0, colon).c_str()) == rank && std::atoll(text.substr(colon + 1).c_str()) == sent) {
    std::raise(SIGKILL);
  }
}

}  // namespace

CompareWorld::CompareWorld(std::unique_ptr<World> world) : world_(std::move(world)) {
  live_.assign(static_cast<size_t>(world_->size()), true);
}

CompareWorld::~CompareWorld() = default;

int32_t CompareWorld::rank() const { return world_->rank(); }
int32_t CompareWorld::size() const { return world_->size(); }

void CompareWorld::Send(size_t index, const std::string& bytes) {
  KillPointForTests(world_->rank(), sent_++);
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
