#include "exec/distributed/world.h"

#include <glog/logging.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/exception.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>

#include "util/error.h"
#include "util/fnv1a.h"

namespace devplace {
namespace {

constexpr const char* kPrefix = "devplace/";

std::string Where(const WorldSpec& spec) {
  return ForMessage(spec.master_addr) + ":" + std::to_string(spec.master_port) + " (MASTER_ADDR:MASTER_PORT)";
}

// c10d's exceptions carry a stack trace (c10::Error) or one sentence
// (c10d::C10dError); an error line keeps the sentence, on one line.
std::string MessageOf(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  const size_t newline = text.find('\n');
  if (newline != std::string::npos) text.resize(newline);
  return ForMessage(text, 300);
}

// A wait that ran out of time, rather than a store that went away.
bool IsTimeout(const std::exception& e) {
  if (dynamic_cast<const c10d::TimeoutError*>(&e)) return true;
  const std::string text = MessageOf(e);
  return text.find("Timeout") != std::string::npos || text.find("timed out") != std::string::npos;
}

// c10d's TCPStore (libtorch 1.13) keeps a thread on each client that
// listens to rank 0's store for watchKey's callbacks. When rank 0's process
// ends first (it failed, or was killed), that thread throws
// std::system_error ("Connection reset by peer") out of itself, and
// std::terminate would abort this rank with a trace, racing the main
// thread's own error line. The handler makes it the rank's one error line
// (the command's own, when that came first) and exit status 1; any other
// escaped exception goes on to the default handler.
std::string g_lost_store_line;
std::terminate_handler g_default_terminate = nullptr;

[[noreturn]] void StoreLostTerminate() {
  if (std::exception_ptr escaped = std::current_exception()) {
    try {
      std::rethrow_exception(escaped);
    } catch (const std::system_error& e) {
      PrintErrorLineOnce(g_lost_store_line + MessageOf(e) + "\n");
      std::_Exit(1);
    } catch (...) {
    }
  }
  if (g_default_terminate) g_default_terminate();
  std::abort();
}

void EndLostStoreThreadsWithOneLine(const WorldSpec& spec) {
  g_lost_store_line = "devplace: error: distributed run: rank " + std::to_string(spec.rank) + " lost rank 0's store at " +
                      Where(spec) + ": ";
  std::terminate_handler previous = std::set_terminate(StoreLostTerminate);
  if (previous != StoreLostTerminate) g_default_terminate = previous;
}

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(std::max<int64_t>(1, static_cast<int64_t>(seconds * 1000)));
}

int64_t WholeNumber(const char* name, const std::string& text, int64_t low, int64_t high) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < low || value > high) {
    throw Error(std::string("distributed run: ") + name + "=" + ForMessage(text) + ": not a whole number from " +
                std::to_string(low) + " to " + std::to_string(high));
  }
  return value;
}

std::string HexOf(uint64_t x) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(x));
  return text;
}

std::string Decimal(int64_t x) { return std::to_string(x); }

}  // namespace

std::optional<WorldSpec> WorldSpecFromEnvironment() {
  const char* names[] = {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};
  std::string missing;
  int set = 0;
  for (const char* name : names) {
    if (std::getenv(name)) {
      ++set;
    } else {
      missing += missing.empty() ? name : std::string(", ") + name;
    }
  }
  if (set == 0) return std::nullopt;
  if (set < 4) {
    throw Error("distributed run: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT go together (none: one process); " +
                missing + " not set");
  }
  WorldSpec spec;
  spec.size = static_cast<int32_t>(WholeNumber("WORLD_SIZE", std::getenv("WORLD_SIZE"), 1, 4096));
  spec.rank = static_cast<int32_t>(WholeNumber("RANK", std::getenv("RANK"), 0, spec.size - 1));
  spec.master_addr = std::getenv("MASTER_ADDR");
  if (spec.master_addr.empty()) throw Error("distributed run: MASTER_ADDR is empty: the host of rank 0");
  spec.master_port = static_cast<int32_t>(WholeNumber("MASTER_PORT", std::getenv("MASTER_PORT"), 1, 65535));
  if (const char* timeout = std::getenv("DEVPLACE_DIST_TIMEOUT_S")) {
    double value = 0;
    const std::string text = timeout;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !(value >= 0.1 && value <= 86400)) {
      throw Error("distributed run: DEVPLACE_DIST_TIMEOUT_S=" + ForMessage(text) + ": not a number of seconds from 0.1 to 86400");
    }
    spec.timeout_s = value;
  }
  return spec;
}

WorldFact ProgramFact() {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return {"program (devplace build)", bytes};
}

// The server (rank 0 only) and this rank's connection to it. A c10d
// client whose wait timed out is out of step with the server (the server's
// late answer would be read as the reply to the next request), so it is
// replaced after every timeout.
struct World::Store {
  c10::intrusive_ptr<c10d::TCPStore> server;
  c10::intrusive_ptr<c10d::TCPStore> client;
};

World::World(const WorldSpec& spec) : spec_(spec), store_(std::make_unique<Store>()) {}
World::~World() = default;

namespace {

c10::intrusive_ptr<c10d::TCPStore> Connect(const WorldSpec& spec, bool server) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(spec.master_port);
  options.isServer = server;
  options.waitWorkers = false;
  options.timeout = Millis(spec.timeout_s);
  try {
    return c10::make_intrusive<c10d::TCPStore>(spec.master_addr, options);
  } catch (const std::exception& e) {
    if (server) {
      throw Error("distributed run: rank 0 cannot start the rendezvous store on port " + Decimal(spec.master_port) +
                  " (MASTER_PORT): " + MessageOf(e));
    }
    throw Error("distributed run: rank " + Decimal(spec.rank) + " cannot reach rank 0's store at " + Where(spec) +
                " within " + ShowSeconds(spec.timeout_s) + ": " + MessageOf(e));
  }
}

}  // namespace

std::unique_ptr<World> World::Join(const WorldSpec& spec, const std::vector<WorldFact>& facts) {
  // c10d logs its own complaints through glog before it throws; the error
  // line this program prints says it once.
  FLAGS_minloglevel = google::GLOG_FATAL;
  std::unique_ptr<World> world(new World(spec));
  EndLostStoreThreadsWithOneLine(spec);
  if (spec.rank == 0) world->store_->server = Connect(spec, /*server=*/true);
  world->store_->client = Connect(spec, /*server=*/false);
  world->CompareFacts(facts);
  return world;
}

void World::CompareFacts(const std::vector<WorldFact>& facts) {
  std::string mine;
  for (const WorldFact& fact : facts) {
    mine += fact.name + "=" + (fact.shown ? "'" + fact.text + "'" : HexOf(Fnv1a64(fact.text))) + "\n";
  }
  Put("hello/" + Decimal(rank()), mine);

  std::vector<std::string> hellos;
  for (int32_t r = 0; r < size(); ++r) hellos.push_back(kPrefix + std::string("hello/") + Decimal(r));
  try {
    store_->client->wait(hellos, Millis(timeout_s()));
  } catch (const std::exception& e) {
    if (!IsTimeout(e)) {
      throw Error("distributed run: rank " + Decimal(rank()) + " lost rank 0's store at " + Where(spec_) +
                  " while the world filled (rank 0 ends when some rank has not joined within " + ShowSeconds(timeout_s()) +
                  "): " + MessageOf(e));
    }
    std::string absent;
    try {
      store_->client = Connect(spec_, false);
      for (int32_t r = 0; r < size(); ++r) {
        if (!store_->client->check({hellos[r]})) absent += (absent.empty() ? "" : ", ") + Decimal(r);
      }
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      // Rank 0 timed out too and ended between this rank's reconnecting
      // and asking: the store went (a broken pipe), not this rank's fault.
      throw Error("distributed run: rank " + Decimal(rank()) + " lost rank 0's store at " + Where(spec_) +
                  " while the world filled (rank 0 ends when some rank has not joined within " + ShowSeconds(timeout_s()) +
                  "): " + MessageOf(e));
    }
    throw Error("distributed run: rank(s) " + absent + " of WORLD_SIZE=" + Decimal(size()) + " did not join within " +
                ShowSeconds(timeout_s()) + " (DEVPLACE_DIST_TIMEOUT_S); rank 0's store is at " + Where(spec_));
  }

  // Every rank compares every rank's facts with rank 0's, so each says
  // the same thing; the first difference is named.
  std::string mismatch;
  auto lines_of = [](const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  };
  try {
    const std::vector<uint8_t> rank0 = store_->client->get(hellos[0]);
    const std::vector<std::string> first = lines_of(std::string(rank0.begin(), rank0.end()));
    for (int32_t r = 1; r < size() && mismatch.empty(); ++r) {
      const std::vector<uint8_t> bytes = store_->client->get(hellos[r]);
      const std::vector<std::string> theirs = lines_of(std::string(bytes.begin(), bytes.end()));
      for (size_t i = 0; i < std::max(first.size(), theirs.size()) && mismatch.empty(); ++i) {
        const std::string a = i < first.size() ? first[i] : "(none)";
        const std::string b = i < theirs.size() ? theirs[i] : "(none)";
        if (a == b) continue;
        const std::string name = a.substr(0, a.find('='));
        const std::string theirs_value = b.substr(b.find('=') + 1), first_value = a.substr(a.find('=') + 1);
        std::string hint = "every rank needs the same build, inputs and flags";
        for (const WorldFact& fact : facts) {
          if (fact.name == name) hint = fact.hint;
        }
        const bool shown = !first_value.empty() && first_value[0] == '\'';
        mismatch = "distributed run: rank " + Decimal(r) + "'s " + name + " differs from rank 0's (" +
                   (shown ? "" : "checksum ") + theirs_value + ", rank 0 has " + first_value + "): " + hint;
      }
    }
    Put("checked/" + Decimal(rank()), "1");
    if (rank() == 0) {
      // The store lives in this process: it stays up until every rank has
      // read what it compares (or the timeout says one never will).
      std::vector<std::string> checked;
      for (int32_t r = 0; r < size(); ++r) checked.push_back(kPrefix + std::string("checked/") + Decimal(r));
      store_->client->wait(checked, Millis(timeout_s()));
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    if (!mismatch.empty()) throw Error(mismatch);
    throw Error("distributed run: rank " + Decimal(rank()) + " lost rank 0's store at " + Where(spec_) + ": " + MessageOf(e));
  }
  if (!mismatch.empty()) throw Error(mismatch);
}

void World::Put(const std::string& key, const std::string& bytes) {
  try {
    store_->client->set(kPrefix + key, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  } catch (const std::exception& e) {
    throw Error("distributed run: rank " + Decimal(rank()) + " lost rank 0's store at " + Where(spec_) + ": " + MessageOf(e));
  }
}

std::optional<std::string> World::Take(const std::string& key, double timeout_s) {
  std::optional<std::string> bytes = Read(key, timeout_s);
  if (bytes) Delete(key);
  return bytes;
}

std::optional<std::string> World::Read(const std::string& key, double timeout_s) {
  // c10d's get waits for the key itself, up to the store's timeout: one
  // round trip to rank 0's store fewer than a wait before it.
  try {
    store_->client->setTimeout(Millis(timeout_s));
    const std::vector<uint8_t> bytes = store_->client->get(kPrefix + key);
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception& e) {
    if (!IsTimeout(e)) {
      throw Error("distributed run: rank " + Decimal(rank()) + " lost rank 0's store at " + Where(spec_) + ": " + MessageOf(e));
    }
    // A wait that timed out leaves the connection mid-answer: a new one.
    store_->client = Connect(spec_, false);
    return std::nullopt;
  }
}

void World::Delete(const std::string& key) {
  try {
    store_->client->deleteKey(kPrefix + key);
  } catch (const std::exception& e) {
    throw Error("distributed run: rank " + Decimal(rank()) + " lost rank 0's store at " + Where(spec_) + ": " + MessageOf(e));
  }
}

}  // namespace devplace
