#include "exec/distributed/store_ranks.h"

#include <csignal>
#include <cstring>
#include <optional>

#include "exec/distributed/kill_point.h"
#include "exec/distributed/world.h"
#include "util/error.h"

namespace devplace {
namespace {

std::string BytesOf(const std::vector<double>& values) {
  std::string bytes(values.size() * sizeof(double), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

}  // namespace

StoreRanks::StoreRanks(World& world, std::vector<int32_t> members, std::string prefix, std::string lost)
    : world_(world), members_(std::move(members)), prefix_(std::move(prefix)), lost_(std::move(lost)) {
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_[i] == world.rank()) index_ = static_cast<int32_t>(i);
  }
}

StoreRanks::~StoreRanks() = default;

void StoreRanks::Own(std::unique_ptr<World> world) { owned_ = std::move(world); }

// The messages live under PREFIX/KIND/N/MEMBER, N counting the calls of
// each kind (every member makes the same calls in the same order). A
// member waits for rank 0 as long as its store is up: rank 0 may be writing
// a checkpoint. Rank 0 waits for a member at most the world's timeout: one
// that died, or is stuck, ends the run on every rank (rank 0's store goes
// with it) with one line.
void StoreRanks::Sum(std::vector<double>& values) {
  const std::string at = prefix_ + "/sum/" + std::to_string(sums_++) + "/";
  if (rank() != 0) {
    world_.Put(at + std::to_string(rank()), BytesOf(values));
    const std::string total = WaitForRankZero(at + "total/" + std::to_string(rank()));
    if (total.size() != values.size() * sizeof(double)) throw Error("distributed run: rank 0's sum is malformed");
    std::memcpy(values.data(), total.data(), total.size());
    return;
  }
  for (int32_t r = 1; r < size(); ++r) {
    const std::string theirs = FromMember(at + std::to_string(r), r, "gradients");
    if (theirs.size() != values.size() * sizeof(double)) {
      throw Error("distributed run: rank " + std::to_string(members_[r]) + " sent " + std::to_string(theirs.size() / sizeof(double)) +
                  " gradient values, rank 0 has " + std::to_string(values.size()) + " (another network?)");
    }
    for (size_t i = 0; i < values.size(); ++i) {
      double x = 0;
      std::memcpy(&x, theirs.data() + i * sizeof(double), sizeof x);
      values[i] += x;
    }
  }
  const std::string total = BytesOf(values);
  for (int32_t r = 1; r < size(); ++r) world_.Put(at + "total/" + std::to_string(r), total);
}

// Rank 0 returns only once every member has its copy (or is gone): the
// store lives in rank 0's process, and rank 0 may end right after, with
// the error it sent (no checkpoint to resume) or the last "done".
std::string StoreRanks::FromRankZero(const std::string& bytes) {
  const std::string at = prefix_ + "/from0/" + std::to_string(broadcasts_++) + "/";
  if (rank() != 0) {
    std::string theirs = WaitForRankZero(at + std::to_string(rank()));
    world_.Put(at + "read/" + std::to_string(rank()), "");
    return theirs;
  }
  for (int32_t r = 1; r < size(); ++r) world_.Put(at + std::to_string(r), bytes);
  // A member that does not answer is reported by the next message rank 0
  // waits for; here it only must not keep rank 0's copy from the others.
  for (int32_t r = 1; r < size(); ++r) world_.Take(at + "read/" + std::to_string(r), world_.timeout_s());
  return bytes;
}

std::vector<std::string> StoreRanks::ToRankZero(const std::string& bytes) {
  // N: `train`'s report after update N (0 after the start), before that
  // update's checkpoint; `place`'s controllers' report after round N.
  KillPointForTests("DEVPLACE_TEST_KILL_RANK", world_.rank(), gathers_);
  const std::string at = prefix_ + "/to0/" + std::to_string(gathers_++) + "/";
  if (rank() != 0) {
    world_.Put(at + std::to_string(rank()), bytes);
    return {};
  }
  std::vector<std::string> all = {bytes};
  for (int32_t r = 1; r < size(); ++r) all.push_back(FromMember(at + std::to_string(r), r, "report"));
  return all;
}

std::string StoreRanks::WaitForRankZero(const std::string& key) {
  while (true) {
    // Take throws Error when rank 0's store is gone.
    if (std::optional<std::string> bytes = world_.Take(key, world_.timeout_s())) return *bytes;
  }
}

std::string StoreRanks::FromMember(const std::string& key, int32_t member, const char* what) {
  std::optional<std::string> bytes = world_.Take(key, world_.timeout_s());
  if (!bytes) {
    throw Error("distributed run: rank " + std::to_string(members_[member]) + " sent no " + what + " within " +
                ShowSeconds(world_.timeout_s()) + " (DEVPLACE_DIST_TIMEOUT_S): it died, stopped or is slower than that; " + lost_);
  }
  return *bytes;
}

}  // namespace devplace
