// The transport's cost per evaluation on loopback (issue 51, BENCHMARKS.md
// "Across processes"; docs/distributed.md "Transport"): rank 0 sends a
// worker one placement of an N-op graph as the evaluation job it sends
// today, the worker answers with one outcome, and rank 0 reads it. Two
// transports, two ranks as two threads of this process over TCP on
// 127.0.0.1:
//   store: the current path, World::Put / World::Take over c10d's TCPStore
//          (set, wait, get, delete on rank 0's store);
//   gloo:  c10d's ProcessGroupGloo send/recv (a length, then the bytes;
//          the answer as a fixed-size tensor), straight between the ranks.
// Also: what a Gloo recv does when its peer stays quiet past a timeout,
// and when its peer's process ends (a worker killed mid-run).
//   transport_bench [--ops 10000] [--round-trips 2000] [--placements 1]
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

#include <glog/logging.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "exec/distributed/evaluation_messages.h"
#include "exec/distributed/world.h"

namespace {

using devplace::EvaluationJob;
using devplace::Outcome;
using devplace::Placement;
using Clock = std::chrono::steady_clock;

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

EvaluationJob JobOf(int32_t ops, int32_t placements) {
  EvaluationJob job;
  job.batch = 7;
  job.options.seed = 1;
  for (int32_t p = 0; p < placements; ++p) {
    Placement placement(static_cast<size_t>(ops));
    for (int32_t i = 0; i < ops; ++i) placement[static_cast<size_t>(i)] = (i * 7 + p) % 4;
    job.placements.push_back(std::move(placement));
  }
  return job;
}

std::vector<Outcome> AnswerOf(const EvaluationJob& job) {
  std::vector<Outcome> outcomes(job.placements.size());
  for (size_t i = 0; i < outcomes.size(); ++i) outcomes[i] = {true, 0.001 * static_cast<double>(job.placements[i][0] + 1), 0};
  return outcomes;
}

// Both ranks' worlds, joined in two threads as two processes would.
std::pair<std::unique_ptr<devplace::World>, std::unique_ptr<devplace::World>> JoinTwo() {
  devplace::WorldSpec spec;
  spec.size = 2;
  spec.master_addr = "127.0.0.1";
  spec.master_port = FreePort();
  spec.timeout_s = 30;
  std::unique_ptr<devplace::World> worker;
  std::thread join([&] {
    devplace::WorldSpec mine = spec;
    mine.rank = 1;
    worker = devplace::World::Join(mine, {});
  });
  std::unique_ptr<devplace::World> controller = devplace::World::Join(spec, {});
  join.join();
  return {std::move(controller), std::move(worker)};
}

double StoreRoundTripUs(int32_t ops, int32_t placements, int round_trips) {
  auto [controller, worker] = JoinTwo();
  const EvaluationJob job = JobOf(ops, placements);
  std::thread serve([&, w = worker.get()] {
    for (int n = 0; n < round_trips; ++n) {
      const EvaluationJob got = devplace::DecodeJob(*w->Take(devplace::JobKey(1, n), 30));
      w->Put(devplace::ResultKey(1, n), devplace::EncodeOutcomes(AnswerOf(got)));
    }
  });
  const auto start = Clock::now();
  for (int n = 0; n < round_trips; ++n) {
    controller->Put(devplace::JobKey(1, n), devplace::EncodeJob(job));
    devplace::DecodeOutcomes(*controller->Take(devplace::ResultKey(1, n), 30), job.placements.size());
  }
  const double total_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  serve.join();
  return total_us / round_trips;
}

struct GlooPair {
  c10::intrusive_ptr<c10d::TCPStore> server;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> groups[2];
};

GlooPair ConnectGloo(std::chrono::milliseconds timeout) {
  GlooPair pair;
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(FreePort());
  options.isServer = true;
  options.waitWorkers = false;
  options.timeout = std::chrono::milliseconds(30000);
  pair.server = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
  auto make = [&](int rank) {
    c10d::TCPStoreOptions client = options;
    client.isServer = false;
    auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", client);
    auto group_options = c10d::ProcessGroupGloo::Options::create(timeout);
    group_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    group_options->threads = 1;
    pair.groups[rank] = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, 2, group_options);
  };
  std::thread other([&] { make(1); });
  make(0);
  other.join();
  return pair;
}

torch::Tensor BytesTensor(const std::string& bytes) {
  return torch::from_blob(const_cast<char*>(bytes.data()), {static_cast<int64_t>(bytes.size())}, torch::kUInt8).clone();
}

void Send(c10d::ProcessGroupGloo& group, const std::string& bytes, int to) {
  std::vector<torch::Tensor> length = {torch::tensor({static_cast<int64_t>(bytes.size())}, torch::kInt64)};
  group.send(length, to, 0)->wait();
  std::vector<torch::Tensor> payload = {BytesTensor(bytes)};
  group.send(payload, to, 1)->wait();
}

std::string Receive(c10d::ProcessGroupGloo& group, int from) {
  std::vector<torch::Tensor> length = {torch::zeros({1}, torch::kInt64)};
  group.recv(length, from, 0)->wait();
  std::vector<torch::Tensor> payload = {torch::empty({length[0].item<int64_t>()}, torch::kUInt8)};
  group.recv(payload, from, 1)->wait();
  return std::string(reinterpret_cast<const char*>(payload[0].data_ptr<uint8_t>()), static_cast<size_t>(payload[0].numel()));
}

// One message each way when both sides know its size (`sized`), else a
// length before each message.
std::string ReceiveSized(c10d::ProcessGroupGloo& group, int from, size_t bytes) {
  std::vector<torch::Tensor> payload = {torch::empty({static_cast<int64_t>(bytes)}, torch::kUInt8)};
  group.recv(payload, from, 1)->wait();
  return std::string(reinterpret_cast<const char*>(payload[0].data_ptr<uint8_t>()), bytes);
}

double GlooRoundTripUs(int32_t ops, int32_t placements, int round_trips, bool sized) {
  GlooPair pair = ConnectGloo(std::chrono::milliseconds(30000));
  const EvaluationJob job = JobOf(ops, placements);
  const size_t job_bytes = devplace::EncodeJob(job).size();
  const size_t answer_bytes = devplace::EncodeOutcomes(AnswerOf(job)).size();
  std::thread serve([&] {
    for (int n = 0; n < round_trips; ++n) {
      const std::string message = sized ? ReceiveSized(*pair.groups[1], 0, job_bytes) : Receive(*pair.groups[1], 0);
      const std::string answer = devplace::EncodeOutcomes(AnswerOf(devplace::DecodeJob(message)));
      if (sized) {
        std::vector<torch::Tensor> payload = {BytesTensor(answer)};
        pair.groups[1]->send(payload, 0, 1)->wait();
      } else {
        Send(*pair.groups[1], answer, 0);
      }
    }
  });
  const auto start = Clock::now();
  for (int n = 0; n < round_trips; ++n) {
    if (sized) {
      std::vector<torch::Tensor> payload = {BytesTensor(devplace::EncodeJob(job))};
      pair.groups[0]->send(payload, 1, 1)->wait();
      devplace::DecodeOutcomes(ReceiveSized(*pair.groups[0], 1, answer_bytes), job.placements.size());
    } else {
      Send(*pair.groups[0], devplace::EncodeJob(job), 1);
      devplace::DecodeOutcomes(Receive(*pair.groups[0], 1), job.placements.size());
    }
  }
  const double total_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  serve.join();
  return total_us / round_trips;
}

// A recv whose peer stays quiet past the timeout, then a peer that goes
// away: what dropping a worker would meet.
void GlooTimeoutProbe() {
  GlooPair pair = ConnectGloo(std::chrono::milliseconds(30000));
  std::vector<torch::Tensor> first = {torch::zeros({1}, torch::kInt64)};
  auto work = pair.groups[0]->recv(first, 1, 5);
  const auto start = Clock::now();
  std::string what = "no timeout";
  try {
    work->wait(std::chrono::milliseconds(200));
  } catch (const std::exception& e) {
    what = e.what();
    what = what.substr(0, what.find('\n'));
  }
  std::printf("gloo recv, peer quiet, wait(200 ms): returned after %.0f ms: %s\n",
              std::chrono::duration<double, std::milli>(Clock::now() - start).count(), what.c_str());
  std::vector<torch::Tensor> again = {torch::zeros({1}, torch::kInt64)};
  std::string after = "returned";
  try {
    pair.groups[0]->recv(again, 1, 7)->wait(std::chrono::milliseconds(200));
  } catch (const std::exception& e) {
    after = e.what();
    after = after.substr(0, after.find('\n'));
  }
  std::printf("the next recv on that pair: %s\n", after.c_str());
  // A worker that dies closes its sockets as this does (a fresh pair).
  pair = ConnectGloo(std::chrono::milliseconds(30000));
  std::printf("the peer's group closes now (as a killed worker's would); a recv waits 2 s for it:\n");
  pair.groups[1].reset();
  std::vector<torch::Tensor> second = {torch::zeros({1}, torch::kInt64)};
  std::string then = "returned";
  try {
    pair.groups[0]->recv(second, 1, 6)->wait(std::chrono::milliseconds(2000));
  } catch (const std::exception& e) {
    then = e.what();
    then = then.substr(0, then.find('\n'));
  }
  std::printf("recv from the closed peer: %s\n", then.c_str());
}

int ArgOr(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  FLAGS_minloglevel = google::GLOG_FATAL;
  const int ops = ArgOr(argc, argv, "--ops", 10000);
  const int round_trips = ArgOr(argc, argv, "--round-trips", 2000);
  const int placements = ArgOr(argc, argv, "--placements", 1);
  const size_t job_bytes = devplace::EncodeJob(JobOf(ops, placements)).size();
  std::printf("%d-op graph, %d placement(s) a message (%zu bytes), %d round trips on loopback\n", ops, placements,
              job_bytes, round_trips);
  for (int repeat = 0; repeat < 3; ++repeat) {
    const double store_us = StoreRoundTripUs(ops, placements, round_trips);
    const double gloo_us = GlooRoundTripUs(ops, placements, round_trips, /*sized=*/false);
    const double sized_us = GlooRoundTripUs(ops, placements, round_trips, /*sized=*/true);
    std::printf("us per evaluation: store %.1f   gloo (length + message) %.1f   gloo (one message, size known) %.1f\n",
                store_us / placements, gloo_us / placements, sized_us / placements);
  }
  GlooTimeoutProbe();
  return 0;
}
