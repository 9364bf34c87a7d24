// METIS k-way partitioning (GDP's baseline): co-location units weighted by
// compute time, edges by bytes, one part per device with target weights
// proportional to device speed.
#include <metis.h>

#include <numeric>

#include "placers/memory_repair.h"
#include "placers/methods.h"
#include "placers/partition_input.h"
#include "util/error.h"
#include "util/quiet_stdout.h"

namespace devplace {

PlacerOutput PlaceMetis(const PlacementProblem& problem) {
  const Cluster& cluster = problem.cluster;
  PartitionInput input = BuildPartitionInput(problem);
  const int32_t n = input.num_vertices();
  std::vector<int32_t> devices(cluster.num_devices());
  std::iota(devices.begin(), devices.end(), 0);
  std::vector<int32_t> part(n, 0);

  // METIS crashes when asked for one part and accepts bad input silently:
  // one device, or fewer units than devices, is handled here.
  idx_t nparts = cluster.num_devices();
  if (nparts > 1 && n >= nparts) {
    std::vector<real_t> target_share(nparts);
    double total_speed = 0;
    for (const Device& d : cluster.devices) total_speed += d.peak_flops_per_s;
    for (idx_t p = 0; p < nparts; ++p) target_share[p] = static_cast<real_t>(cluster.devices[p].peak_flops_per_s / total_speed);
    // The shares must sum to exactly 1 in METIS's own arithmetic.
    real_t sum = 0;
    for (idx_t p = 0; p + 1 < nparts; ++p) sum += target_share[p];
    target_share[nparts - 1] = 1.0f - sum;

    static_assert(sizeof(idx_t) == sizeof(int32_t), "METIS built with 32-bit indices");
    idx_t vertices = n;
    idx_t constraints = 1;
    idx_t cut = 0;
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = static_cast<idx_t>(problem.seed & 0x7fffffff);
    options[METIS_OPTION_NUMBERING] = 0;
    std::vector<idx_t> result(n);
    int status = METIS_ERROR;
    {
      // METIS prints warnings to stdout on many parts of a small graph;
      // stdout is devplace's (a table, --json).
      QuietStdout quiet;
      status = METIS_PartGraphKway(&vertices, &constraints, input.adjacency_begin.data(), input.adjacency.data(),
                                     input.vertex_weight.data(), nullptr, input.edge_weight.data(), &nparts,
                                     target_share.data(), nullptr, options, &cut, result.data());
    }
    if (status != METIS_OK) throw Error("metis: partitioning failed (status " + std::to_string(status) + ")");
    for (int32_t v = 0; v < n; ++v) part[v] = result[v];
  } else if (nparts > 1) {
    // Fewer units than devices: one unit per device, in order.
    for (int32_t v = 0; v < n; ++v) part[v] = v;
  }
  std::vector<int32_t> device_of_unit = DevicesFromParts(problem, input, part, devices);
  PlacerOutput out;
  out.placement = RepairMemory(problem, input.units, std::move(device_of_unit), out.note);
  return out;
}

}  // namespace devplace
