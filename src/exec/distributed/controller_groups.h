// `place --controllers C` across processes: the WORLD_SIZE ranks form C
// groups of contiguous ranks, as equal as possible (the first
// WORLD_SIZE mod C groups one rank larger); the first rank of each group is
// a controller, the others its workers. Controller 0 is rank 0, the head.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace devplace {

struct ControllerGroup {
  int32_t controller = 0;        // its first rank
  std::vector<int32_t> workers;  // the rest, in rank order
};

// The groups of a world of `world_size` ranks led by `controllers`
// controllers. Throws Error (one line naming --controllers) unless
// 1 <= controllers <= world_size.
std::vector<ControllerGroup> ControllerGroups(int32_t world_size, int32_t controllers);

// The index of the group `rank` is in.
int32_t GroupOfRank(const std::vector<ControllerGroup>& groups, int32_t rank);

// "2 controllers: ranks 0-1, 2-3": what docs and lines call the groups.
std::string DescribeGroups(const std::vector<ControllerGroup>& groups);

}  // namespace devplace
