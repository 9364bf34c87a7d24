// A lower bound on the step time of any placement, so that reports can say
// how far a placement is from the best possible: no placement beats the
// critical path with every op on its fastest device and free transfers, nor
// the total work spread perfectly over every device.
#pragma once

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "graph/graph.h"

namespace devplace {

struct LowerBound {
  double critical_path_us = 0;  // longest chain, each op on its fastest device, no copies
  double work_us = 0;           // sum of fastest op times / ops the cluster runs at once
  double step_time_us() const { return critical_path_us > work_us ? critical_path_us : work_us; }
};

LowerBound StepTimeLowerBound(const Graph& graph, const Cluster& cluster, const CostModel& cost);

}  // namespace devplace
