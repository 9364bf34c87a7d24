// The extension module devplace._devplace; the package devplace
// (python/devplace/__init__.py) is what users import. It links no torch, as
// `devplace` does not: the learned methods run in _devplace_learned
// (learned_module.cc), which the package imports on a learned method's first
// call, as `devplace` hands them to devplace-learn.
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "util/error.h"

namespace py = pybind11;

PYBIND11_MODULE(_devplace, m) {
  m.doc() = "devplace's C++ core without torch: graphs, clusters, the step simulator, the baselines and searches";
  // devplace::Error, the one bad-input exception, with the command line's
  // one-line message: a ValueError, as every one is about a bad input.
  // pybind11's translators serve every extension, so _devplace_learned's
  // Error is this class too.
  py::register_exception<devplace::Error>(m, "Error", PyExc_ValueError);
  devplace::python::BindGraphs(m);
  devplace::python::BindSimulation(m);
  devplace::python::BindMethods(m);
  devplace::python::BindEnvironment(m);
}
