// A simulated step as Python sees it (devplace.SimResult): the simulator's
// result and the cluster its devices belong to.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "cluster/cluster.h"
#include "sim/simulator.h"

namespace devplace::python {

struct StepResult {
  SimResult result;
  std::shared_ptr<const Cluster> cluster;
};

// The object devplace.SimResult wraps (registered by BindSimulation).
pybind11::object ToPython(StepResult result);

}  // namespace devplace::python
