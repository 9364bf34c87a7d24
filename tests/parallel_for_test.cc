#include "util/parallel_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace devplace {
namespace {

TEST(StridedParallelForTest, EveryItemOnceOnItsWorkersThreadInOrder) {
  for (size_t workers : {0, 1, 3, 8}) {
    const size_t count = 23;
    std::vector<int> visits(count, 0);
    std::vector<size_t> worker_of(count, 99);
    std::vector<std::thread::id> thread_of(count);
    StridedParallelFor(count, workers, [&](size_t w, size_t k) {
      ++visits[k];  // each k belongs to one worker: no race
      worker_of[k] = w;
      thread_of[k] = std::this_thread::get_id();
    });
    const size_t used = std::max<size_t>(1, workers);
    for (size_t k = 0; k < count; ++k) {
      EXPECT_EQ(visits[k], 1) << k;
      EXPECT_EQ(worker_of[k], k % used) << k;
      EXPECT_EQ(thread_of[k], thread_of[k % used]) << k;  // a worker's items share its thread
    }
    if (used == 1) {
      EXPECT_EQ(thread_of[0], std::this_thread::get_id());
    } else {
      EXPECT_NE(thread_of[0], thread_of[1]);
    }
  }
}

TEST(StridedParallelForTest, NoItemsNoCall) {
  bool called = false;
  StridedParallelFor(0, 4, [&](size_t, size_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(StridedParallelForTest, AWorkersExceptionIsRethrownAfterTheOthersFinish) {
  std::atomic<int> done{0};
  EXPECT_THROW(StridedParallelFor(12, 3,
                                  [&](size_t w, size_t k) {
                                    if (k == 4) throw std::runtime_error("item 4");
                                    if (w != 1) ++done;
                                  }),
               std::runtime_error);
  EXPECT_EQ(done.load(), 8);  // workers 0 and 2 ran all their items
}

}  // namespace
}  // namespace devplace
