// The processes of one distributed run, as PyTorch users launch them: the
// environment variables RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (set
// by torchrun, a Slurm script or scripts/launch_local.sh). Rank 0 holds
// torch.distributed's c10d TCPStore, the rendezvous every rank joins and the
// mailbox the ranks exchange messages through. Torch-free header: the store
// lives in world.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace devplace {

struct WorldSpec {
  int32_t rank = 0;
  int32_t size = 1;
  std::string master_addr;
  int32_t master_port = 0;
  // How long a rank waits for the others: to join, to answer. From
  // DEVPLACE_DIST_TIMEOUT_S.
  double timeout_s = 60;
};

inline constexpr double kDefaultWorldTimeoutS = 60;

// The world the environment names, or nullopt when none of the four
// variables is set (one process, as without them). Some set but not all,
// or one malformed: Error naming it.
std::optional<WorldSpec> WorldSpecFromEnvironment();

// One thing every rank must have alike (the program, the graph, ...),
// compared across ranks by checksum when they join.
struct WorldFact {
  std::string name;  // how an error names it: "graph", "cluster", ...
  std::string text;  // what it is here; only its checksum travels, unless shown
  // A short one-line text that travels as it is, so that an error shows
  // both ranks' (a cluster's device count and kinds), not checksums.
  bool shown = false;
  // What the error line ends with: what the ranks need to agree on.
  std::string hint = "every rank needs the same build, inputs and flags";
};

// The program's own bytes: two ranks running different builds are refused.
WorldFact ProgramFact();

class World {
 public:
  // Joins: rank 0 starts the store, every rank connects to it, publishes
  // the checksums of `facts`, and waits for every other rank's. Throws Error
  // (every rank, within about timeout_s) when the store cannot be reached
  // or started, when some rank did not join in time, or when a rank's facts
  // differ from rank 0's.
  static std::unique_ptr<World> Join(const WorldSpec& spec, const std::vector<WorldFact>& facts);
  ~World();

  int32_t rank() const { return spec_.rank; }
  int32_t size() const { return spec_.size; }
  double timeout_s() const { return spec_.timeout_s; }
  const WorldSpec& spec() const { return spec_; }

  // Leaves `bytes` under `key` for another rank to Take.
  void Put(const std::string& key, const std::string& bytes);
  // The bytes under `key` once some rank Puts them, removed from the store;
  // nullopt when none came within `timeout_s`. Throws Error when the store
  // is gone (rank 0 ended).
  std::optional<std::string> Take(const std::string& key, double timeout_s);
  // As Take, but the bytes stay for other ranks to read too.
  std::optional<std::string> Read(const std::string& key, double timeout_s);
  // Removes `key` (nothing when it is not there).
  void Delete(const std::string& key);

 private:
  struct Store;
  explicit World(const WorldSpec& spec);
  void CompareFacts(const std::vector<WorldFact>& facts);
  WorldSpec spec_;
  std::unique_ptr<Store> store_;
};

}  // namespace devplace
