#include "exec/distributed/controller_groups.h"

#include "util/error.h"

namespace devplace {

std::vector<ControllerGroup> ControllerGroups(int32_t world_size, int32_t controllers) {
  if (controllers < 1 || controllers > world_size) {
    throw Error("--controllers " + std::to_string(controllers) + " with WORLD_SIZE=" + std::to_string(world_size) +
                ": each controller is a rank of its own, so --controllers must be from 1 to WORLD_SIZE");
  }
  std::vector<ControllerGroup> groups;
  const int32_t base = world_size / controllers, extra = world_size % controllers;
  int32_t first = 0;
  for (int32_t g = 0; g < controllers; ++g) {
    const int32_t count = base + (g < extra ? 1 : 0);
    ControllerGroup group;
    group.controller = first;
    for (int32_t r = first + 1; r < first + count; ++r) group.workers.push_back(r);
    groups.push_back(std::move(group));
    first += count;
  }
  return groups;
}

int32_t GroupOfRank(const std::vector<ControllerGroup>& groups, int32_t rank) {
  int32_t found = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].controller <= rank) found = static_cast<int32_t>(g);
  }
  return found;
}

std::string DescribeGroups(const std::vector<ControllerGroup>& groups) {
  std::string text = std::to_string(groups.size()) + (groups.size() == 1 ? " controller: ranks " : " controllers: ranks ");
  for (size_t g = 0; g < groups.size(); ++g) {
    const int32_t last = groups[g].workers.empty() ? groups[g].controller : groups[g].workers.back();
    text += (g == 0 ? "" : ", ") + std::to_string(groups[g].controller) +
            (last == groups[g].controller ? "" : "-" + std::to_string(last));
  }
  return text;
}

}  // namespace devplace
