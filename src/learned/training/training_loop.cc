#include "learned/training/training_loop.h"

#include <malloc.h>
#include <torch/torch.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "util/stop_request.h"

namespace devplace {

void ConfigureProcessForTraining() {
  torch::set_num_threads(1);
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

void RunTrainingLoop(TrainingMode& mode) {
  mode.Start();
  if (mode.num_controllers() == 1) {
    while (!mode.Done()) mode.Step(0);
  } else {
    // An exception must not escape a thread (that would terminate the
    // program): the first one stops every controller and is rethrown.
    std::vector<std::thread> threads;
    std::exception_ptr failure;
    std::mutex failure_mutex;
    std::atomic<bool> stopping{false};
    for (int32_t c = 0; c < mode.num_controllers(); ++c) {
      threads.emplace_back([&mode, c, &failure, &failure_mutex, &stopping] {
        try {
          while (!mode.Done() && !stopping) mode.Step(c);
        } catch (...) {
          std::lock_guard<std::mutex> lock(failure_mutex);
          if (!failure) failure = std::current_exception();
          stopping = true;
        }
      });
    }
    for (auto& t : threads) t.join();
    if (failure) std::rethrow_exception(failure);
  }
  SearchEnded();  // the last checkpoint may take a while on a big policy: the stop's watchdog waits for it
  mode.Finish();
}

}  // namespace devplace
