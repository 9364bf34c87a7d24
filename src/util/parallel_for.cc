#include "util/parallel_for.h"

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

namespace devplace {

void StridedParallelFor(size_t count, size_t workers, const std::function<void(size_t worker, size_t k)>& body) {
  workers = std::max<size_t>(1, std::min(workers, count));
  std::vector<std::exception_ptr> errors(workers);
  auto work = [&](size_t w) {
    try {
      for (size_t k = w; k < count; k += workers) body(w, k);
    } catch (...) {
      errors[w] = std::current_exception();
    }
  };
  if (workers == 1) {
    if (count > 0) work(0);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(workers);
    for (size_t w = 0; w < workers; ++w) threads.emplace_back(work, w);
    for (std::thread& t : threads) t.join();
  }
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace devplace
