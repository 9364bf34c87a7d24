// devplace.methods() and devplace.place(): every baseline and search of
// the one method registry, run by RunMethod as `devplace place` runs them.
// The learned methods need torch, which this module does not load.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <csignal>
#include <cmath>

#include "bindings.h"
#include "methods/method_registry.h"
#include "methods/run_method.h"
#include "sim_results.h"
#include "simulation.h"
#include "util/error.h"
#include "util/stop_request.h"

namespace py = pybind11;

namespace devplace::python {
namespace {

// A Python exception caught in one place (with the GIL) and raised later.
class PendingPythonError {
 public:
  bool pending() const { return type_ != nullptr; }
  void Fetch() { PyErr_Fetch(&type_, &value_, &traceback_); }
  // Raises it as the C++ exception pybind11 turns back into it.
  [[noreturn]] void Raise() {
    PyErr_Restore(type_, value_, traceback_);
    type_ = value_ = traceback_ = nullptr;
    throw py::error_already_set();
  }

 private:
  PyObject* type_ = nullptr;
  PyObject* value_ = nullptr;
  PyObject* traceback_ = nullptr;
};

const char* KindName(MethodKind kind) {
  switch (kind) {
    case MethodKind::kBaseline: return "baseline";
    case MethodKind::kSearch: return "search";
    case MethodKind::kLearned: return "learned";
  }
  return "?";
}

py::dict Place(Simulation& simulation, const std::string& method_name, int64_t max_evaluations, double max_seconds,
               int64_t seed) {
  if (FindLearnedMethod(method_name)) {
    throw Error("method " + ForMessage(method_name) +
                " is learned: it trains with libtorch, which the Python module does not load; run it with the "
                "command line for now (devplace-learn place --method " + ForMessage(method_name) + " ...)");
  }
  const MethodInfo& method = FindMethod(method_name, {MethodKind::kBaseline, MethodKind::kSearch});
  if (max_evaluations < 0) throw Error("max_evaluations must be 0 (the method's default) or more, got " + std::to_string(max_evaluations));
  if (!(max_seconds >= 0) || !std::isfinite(max_seconds)) {
    throw Error("max_seconds must be a finite number of seconds, 0 or more (0: no limit), got " + ShowNumber(max_seconds));
  }
  if (seed < 0) throw Error("seed must be 0 or more, got " + std::to_string(seed));

  LearnedOptions options;  // what RunMethod reads of it for a placer: the budget and the seed
  options.method = method.name;
  options.max_samples = max_evaluations;
  options.max_seconds = max_seconds;
  options.seed = static_cast<uint64_t>(seed);
  // Ctrl-C during a search: its progress callback runs Python's signal
  // handlers; one that raises (KeyboardInterrupt) stops the search as the
  // command line's SIGINT does, and its exception is raised once the
  // method has ended. One-shot placers take no time to speak of.
  PendingPythonError interrupt;
  MethodProgress progress;
  progress.search = [&interrupt](const SearchProgress&) {
    if (interrupt.pending()) return;
    py::gil_scoped_acquire acquire;
    if (PyErr_CheckSignals() != 0) {
      interrupt.Fetch();
      RequestStop(SIGINT);
    }
  };
  MethodOutput output;
  SimResult result;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(simulation.mutex());
    PlacementProblem problem{simulation.graph(), simulation.cluster(), simulation.cost(), simulation.simulator()};
    problem.seed = options.seed;
    try {
      output = RunMethod(problem, method, options, progress);
    } catch (...) {
      if (interrupt.pending()) ClearStopRequest();  // the next search must not stop at once
      throw;
    }
    if (interrupt.pending()) {
      ClearStopRequest();
      py::gil_scoped_acquire acquire;
      interrupt.Raise();
    }
    if (output.placement.empty()) {
      throw Error("method " + method.name + " found no placement" + (output.note.empty() ? "" : ": " + output.note));
    }
    result = output.result ? std::move(*output.result) : simulation.simulator().Run(output.placement);
  }
  py::dict out;
  out["method"] = method.name;
  out["placement"] = py::array_t<int32_t>(static_cast<py::ssize_t>(output.placement.size()), output.placement.data());
  out["step_time_s"] = result.invalid ? py::object(py::none()) : py::object(py::float_(result.step_time_s()));
  out["result"] = ToPython({std::move(result), simulation.cluster_ptr()});
  out["note"] = output.note;
  out["evaluations"] = output.samples;
  out["seconds"] = output.seconds;
  return out;
}

}  // namespace

void BindMethods(py::module_& m) {
  m.def(
      "methods",
      [] {
        py::list methods;
        for (const MethodInfo& info : ListMethods()) {
          py::dict method;
          method["name"] = info.name;
          method["kind"] = KindName(info.kind);
          method["description"] = info.description;
          method["available"] = info.kind != MethodKind::kLearned;
          methods.append(method);
        }
        return methods;
      },
      "Every placing method (name, kind: baseline/search/learned, description, available here).");
  m.def("_place", &Place, py::arg("simulator"), py::arg("method"), py::arg("max_evaluations") = 0,
        py::arg("max_seconds") = 0.0, py::arg("seed") = 1);
}

}  // namespace devplace::python
