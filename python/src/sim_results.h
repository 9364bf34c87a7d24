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

// The object devplace.SimResult wraps. BindSimulation registers the class
// in _devplace; pybind11 shares its registered classes between the
// extensions of one interpreter, so _devplace_learned makes them too.
inline pybind11::object ToPython(StepResult result) { return pybind11::cast(std::move(result)); }

}  // namespace devplace::python
