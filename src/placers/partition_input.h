// The graph partitioners' view of a placement problem: the co-location
// groups as vertices weighted by compute time, and the bytes between them as
// symmetric edge weights, scaled to integers whose sums fit in 32 bits
// (Scotch and METIS both overflow silently otherwise).
#pragma once

#include <cstdint>
#include <vector>

#include "graph/grouping.h"
#include "placers/placer.h"

namespace devplace {

struct PartitionInput {
  Grouping units;                      // vertex v is units.groups[v]
  std::vector<int32_t> vertex_weight;  // >= 1: compute time on the fastest device
  std::vector<int32_t> adjacency_begin;  // CSR, size vertices + 1, symmetric
  std::vector<int32_t> adjacency;
  std::vector<int32_t> edge_weight;      // >= 1: bytes between the two units

  int32_t num_vertices() const { return static_cast<int32_t>(vertex_weight.size()); }
};

PartitionInput BuildPartitionInput(const PlacementProblem& problem);

// Sends each unit to its part's device, except that a unit the device cannot
// run goes to the first device that can.
std::vector<int32_t> DevicesFromParts(const PlacementProblem& problem, const PartitionInput& input,
                                      const std::vector<int32_t>& part, const std::vector<int32_t>& device_of_part);

}  // namespace devplace
