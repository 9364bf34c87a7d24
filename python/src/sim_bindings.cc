// devplace.Simulator and devplace.SimResult: one placement's step, or a
// batch of placements spread over the cores, with Python's lock released
// while the simulators run.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <limits>

#include "arrays.h"
#include "bindings.h"
#include "report/device_map.h"
#include "report/sim_report.h"
#include "sim_results.h"
#include "simulation.h"
#include "util/error.h"

namespace py = pybind11;

namespace devplace::python {
namespace {

// `placement` as `devplace simulate --placement` takes it (a string:
// single:DEVICE, expert, a placement file) or a device index per op.
Placement PlacementOf(Simulation& simulation, py::handle placement) {
  if (py::isinstance<py::str>(placement)) {
    const std::string spec = placement.cast<std::string>();
    py::gil_scoped_release release;
    return ResolvePlacement(spec, simulation.graph(), simulation.cluster());
  }
  return DeviceIndices(placement, simulation.graph().num_ops(), simulation.cluster().num_devices(), "placement");
}

StepResult Run(Simulation& simulation, py::handle placement_object) {
  Placement placement = PlacementOf(simulation, placement_object);
  py::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(simulation.mutex());
  return {simulation.simulator().Run(placement), simulation.cluster_ptr()};
}

// Step times in seconds (NaN where a placement cannot run: `simulate`'s
// null); with `details`, a dict of arrays: step_time_s, ok, oom, invalid,
// peak_memory_bytes [n, devices].
py::object RunBatch(Simulation& simulation, py::handle placements_object, bool details) {
  std::vector<Placement> placements = DeviceIndexRows(placements_object, simulation.graph().num_ops(),
                                                      simulation.cluster().num_devices(), "placements");
  std::vector<SimResult> results;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(simulation.mutex());
    results = simulation.RunBatch(placements);
  }
  const py::ssize_t n = static_cast<py::ssize_t>(results.size());
  py::array_t<double> times(n);
  auto t = times.mutable_unchecked<1>();
  for (py::ssize_t k = 0; k < n; ++k) {
    t(k) = results[k].invalid ? std::numeric_limits<double>::quiet_NaN() : results[k].step_time_s();
  }
  if (!details) return times;
  const py::ssize_t devices = simulation.cluster().num_devices();
  py::array_t<bool> ok(n), oom(n), invalid(n);
  py::array_t<int64_t> peak({n, devices});
  auto o = ok.mutable_unchecked<1>();
  auto m = oom.mutable_unchecked<1>();
  auto v = invalid.mutable_unchecked<1>();
  auto p = peak.mutable_unchecked<2>();
  for (py::ssize_t k = 0; k < n; ++k) {
    o(k) = results[k].ok();
    m(k) = results[k].oom;
    v(k) = results[k].invalid;
    for (py::ssize_t d = 0; d < devices; ++d) p(k, d) = results[k].devices[d].peak_memory_bytes;
  }
  py::dict out;
  out["step_time_s"] = times;
  out["ok"] = ok;
  out["oom"] = oom;
  out["invalid"] = invalid;
  out["peak_memory_bytes"] = peak;
  return out;
}

}  // namespace

void BindSimulation(py::module_& m) {
  py::class_<StepResult>(m, "SimResult", "One simulated training step: its time, and each device's load and memory.")
      .def_property_readonly("step_time_s",
                             [](const StepResult& r) -> py::object {
                               if (r.result.invalid) return py::none();
                               return py::float_(r.result.step_time_s());
                             })
      .def_property_readonly("ok", [](const StepResult& r) { return r.result.ok(); })
      .def_property_readonly("oom", [](const StepResult& r) { return r.result.oom; })
      .def_property_readonly("invalid", [](const StepResult& r) { return r.result.invalid; })
      .def_property_readonly("failed", [](const StepResult& r) { return r.result.failed; })
      .def_property_readonly("reason", [](const StepResult& r) { return r.result.reason; })
      .def_property_readonly("device_names",
                             [](const StepResult& r) {
                               std::vector<std::string> names;
                               for (const Device& d : r.cluster->devices) names.push_back(d.name);
                               return names;
                             })
      .def_property_readonly("peak_memory_bytes",
                             [](const StepResult& r) {
                               py::array_t<int64_t> peak(static_cast<py::ssize_t>(r.result.devices.size()));
                               auto p = peak.mutable_unchecked<1>();
                               for (size_t d = 0; d < r.result.devices.size(); ++d) p(d) = r.result.devices[d].peak_memory_bytes;
                               return peak;
                             })
      .def_property_readonly("device_oom",
                             [](const StepResult& r) {
                               py::array_t<bool> oom(static_cast<py::ssize_t>(r.result.devices.size()));
                               auto o = oom.mutable_unchecked<1>();
                               for (size_t d = 0; d < r.result.devices.size(); ++d) o(d) = r.result.devices[d].oom;
                               return oom;
                             })
      .def(
          "as_dict",
          [](const StepResult& r) {
            // The very object `devplace simulate --json` prints (less the
            // graph's and cluster's names), numbers read back exactly.
            return py::module_::import("json").attr("loads")(SimResultToJson(*r.cluster, r.result).dump());
          },
          "The step as `devplace simulate --json` reports it.")
      .def("__repr__", [](const StepResult& r) {
        std::string text = "<devplace.SimResult ";
        if (r.result.invalid) return text + "invalid: " + r.result.reason + ">";
        text += std::to_string(r.result.step_time_s()) + " s";
        if (r.result.oom) text += ", out of memory";
        return text + ">";
      });

  py::class_<Simulation, std::shared_ptr<Simulation>>(
      m, "Simulator",
      "The step simulator over one graph and cluster (op times computed once): run() one placement, run_batch() "
      "many at once over `workers` threads (0: one per core).")
      .def(py::init([](std::shared_ptr<Graph> graph, std::shared_ptr<Cluster> cluster, const py::object& op_times,
                       bool allow_unmatched_op_times, int32_t workers) {
             if (!graph || !cluster) throw Error("Simulator: graph and cluster must not be None");
             if (workers < 0) throw Error("Simulator: workers must be 0 (one per core) or more, got " + std::to_string(workers));
             std::string table = op_times.is_none() ? "" : py::str(op_times).cast<std::string>();
             py::gil_scoped_release release;
             return std::make_shared<Simulation>(graph, cluster, table, allow_unmatched_op_times, workers);
           }),
           py::arg("graph"), py::arg("cluster"), py::arg("op_times") = py::none(),
           py::arg("allow_unmatched_op_times") = false, py::arg("workers") = 0)
      .def_property_readonly("graph", [](const Simulation& s) { return std::const_pointer_cast<Graph>(s.graph_ptr()); })
      .def_property_readonly("cluster",
                             [](const Simulation& s) { return std::const_pointer_cast<Cluster>(s.cluster_ptr()); })
      .def_property_readonly("workers", &Simulation::workers)
      .def("run", &Run, py::arg("placement"),
           "One step of `placement`: a device index per op (in graph order), or what --placement takes "
           "(single:DEVICE, expert, a placement file).")
      .def(
          "device_map",
          [](Simulation& s, py::handle placement_object) {
            // `devplace export --format device_map`'s document, in its order.
            Placement placement = PlacementOf(s, placement_object);
            return py::module_::import("json").attr("loads")(DeviceMapJson(s.graph(), s.cluster(), placement).dump());
          },
          py::arg("placement"),
          "For a graph exported from PyTorch: the placement as a module -> GPU index or 'cpu' map "
          "(`devplace export --format device_map`).")
      .def("run_batch", &RunBatch, py::arg("placements"), py::arg("details") = false,
           "Step times (float64, s; NaN where a placement cannot run) of an integer array [n, ops] of placements; "
           "with details=True a dict of arrays (step_time_s, ok, oom, invalid, peak_memory_bytes).");
}

}  // namespace devplace::python
