// The extension module devplace._devplace_learned: _place() with the
// learned runners set, as in devplace-learn. It links the learned layer and
// so the shared libtorch that python3-torch loads too; the package imports
// it only when a learned method (rl, hdp, gdp, mars, guided) is first
// placed, so that everything else runs without torch. Its _place takes
// _devplace's Simulator and returns its SimResult: pybind11 shares the
// classes one extension registers with the others of the interpreter.
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "learned/learned_placer.h"
#include "learned/learned_search.h"
#include "methods/method_registry.h"

namespace py = pybind11;

PYBIND11_MODULE(_devplace_learned, m) {
  m.doc() = "devplace's learned methods (libtorch): the _place of devplace._devplace with the learned runners set";
  // _devplace first: its Simulator and SimResult classes, and its Error,
  // which devplace::Error thrown here becomes.
  py::module_::import("devplace._devplace");
  devplace::SetLearnedRunner(devplace::TrainLearnedPlacer);
  devplace::SetLearnedSearchRunner(devplace::RunLearnedSearch);
  devplace::python::BindPlace(m);
}
