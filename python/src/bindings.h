// The pieces of the extension module `_devplace` (python/src/module.cc puts
// them together): each Bind* adds one part's classes and functions.
#pragma once

#include <pybind11/pybind11.h>

namespace devplace::python {

void BindGraphs(pybind11::module_& m);      // Graph, Cluster, models(), cluster_presets()
void BindSimulation(pybind11::module_& m);  // Simulator, SimResult
void BindMethods(pybind11::module_& m);     // methods(), place()
void BindEnvironment(pybind11::module_& m); // UnitEnvironment, the env's C++ side

}  // namespace devplace::python
