// A batch's items shared among worker threads, item k to worker k % workers:
// the shape of every batch of simulations (the simulated environment's
// Measure, the Python module's run_batch), where each worker owns a
// simulator and so must see a fixed share of the items.
#pragma once

#include <cstddef>
#include <functional>

namespace devplace {

// Calls body(worker, k) for every k in [0, count), worker = k % workers,
// each worker's items in increasing order on a thread of its own (on the
// calling thread alone when workers <= 1 or count <= 1; never more workers
// than items). Returns once all are done; the first exception a worker
// threw (by worker number) is then rethrown, the other workers having run
// their items to their end or their own exception.
void StridedParallelFor(size_t count, size_t workers, const std::function<void(size_t worker, size_t k)>& body);

}  // namespace devplace
