// The pieces of the extension modules: `_devplace` (module.cc), without
// torch, and `_devplace_learned` (learned_module.cc), which links the
// learned layer and so libtorch; each Bind* adds one part's classes and
// functions.
#pragma once

#include <pybind11/pybind11.h>

namespace devplace::python {

void BindGraphs(pybind11::module_& m);      // Graph, Cluster, models(), cluster_presets()
void BindSimulation(pybind11::module_& m);  // Simulator, SimResult
void BindMethods(pybind11::module_& m);     // methods(), and _place() for every method but the learned ones
void BindPlace(pybind11::module_& m);       // _place() alone: each extension's, running its own registry's runners
void BindEnvironment(pybind11::module_& m); // UnitEnvironment, the env's C++ side

}  // namespace devplace::python
