// The extension module devplace._devplace; the package devplace
// (python/devplace/__init__.py) is what users import.
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "learned/learned_placer.h"
#include "learned/learned_search.h"
#include "methods/method_registry.h"
#include "util/error.h"

namespace py = pybind11;

PYBIND11_MODULE(_devplace, m) {
  m.doc() = "devplace's C++ core: graphs, clusters, the step simulator and the placing methods";
  // devplace::Error, the one bad-input exception, with the command line's
  // one-line message: a ValueError, as every one is about a bad input.
  py::register_exception<devplace::Error>(m, "Error", PyExc_ValueError);
  // The learned methods run here as in devplace-learn: the module links
  // the torch library, the same libtorch `import torch` loads.
  devplace::SetLearnedRunner(devplace::TrainLearnedPlacer);
  devplace::SetLearnedSearchRunner(devplace::RunLearnedSearch);
  devplace::python::BindGraphs(m);
  devplace::python::BindSimulation(m);
  devplace::python::BindMethods(m);
  devplace::python::BindEnvironment(m);
}
