// devplace._UnitEnvironment: what devplace.PlacementEnv (env.py) asks of
// C++: the units' features as numpy arrays, and placements scored.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>

#include "arrays.h"
#include "bindings.h"
#include "unit_environment.h"
#include "util/error.h"

namespace py = pybind11;

namespace devplace::python {
namespace {

float Log10OrZero(double x) { return x > 1 ? static_cast<float>(std::log10(x)) : 0.0f; }

py::dict ScoreDict(const UnitScore& s) {
  py::dict d;
  d["reward"] = s.reward;
  d["ok"] = s.ok;
  d["oom"] = s.oom;
  d["step_time_s"] = s.ok ? py::object(py::float_(s.step_time_s)) : py::object(py::none());
  d["memory_overflow"] = s.memory_overflow;
  d["learning_cost"] = s.learning_cost;
  return d;
}

std::vector<std::vector<int32_t>> UnitRows(UnitEnvironment& env, py::handle rows, const std::string& what) {
  return DeviceIndexRows(rows, env.num_units(), env.num_devices(), what);
}

}  // namespace

void BindEnvironment(py::module_& m) {
  py::class_<UnitEnvironment, std::shared_ptr<UnitEnvironment>>(
      m, "_UnitEnvironment", "The C++ side of PlacementEnv: units, their features, and placements scored.")
      .def(py::init([](std::shared_ptr<Simulation> simulation, const std::string& failing_signal,
                       double failing_runtime_s) {
             if (!simulation) throw Error("_UnitEnvironment: simulator must not be None");
             UnitEnvironmentOptions options;
             options.failing_signal = failing_signal;
             options.failing_runtime_s = failing_runtime_s;
             py::gil_scoped_release release;
             return std::make_shared<UnitEnvironment>(simulation, options);
           }),
           py::arg("simulator"), py::arg("failing_signal") = "graded", py::arg("failing_runtime_s") = 0.0)
      .def_property_readonly("num_units", &UnitEnvironment::num_units)
      .def_property_readonly("num_devices", &UnitEnvironment::num_devices)
      .def_property_readonly("failing_runtime_s", &UnitEnvironment::failing_runtime_s)
      .def_property_readonly("grades_failures", &UnitEnvironment::grades_failures)
      .def_property_readonly("type_names", [](const UnitEnvironment& e) { return e.features().type_names; })
      .def_property_readonly("unit_names",
                             [](const UnitEnvironment& e) {
                               std::vector<std::string> names;
                               for (const Group& g : e.grouping().groups) names.push_back(g.name);
                               return names;
                             })
      .def_property_readonly("unit_type",
                             [](const UnitEnvironment& e) {
                               const auto& ids = e.features().type_id;
                               return py::array_t<int32_t>(static_cast<py::ssize_t>(ids.size()), ids.data());
                             })
      .def_property_readonly("unit_shape",
                             [](const UnitEnvironment& e) {
                               const auto& f = e.features();
                               return py::array_t<float>({static_cast<py::ssize_t>(f.num_groups),
                                                          static_cast<py::ssize_t>(GroupFeatures::kShapeFeatures)},
                                                         f.shape_features.data());
                             })
      .def_property_readonly("unit_stats",
                             [](const UnitEnvironment& e) {
                               // log1p of the unit's FLOPs, parameter bytes and output bytes.
                               const auto& groups = e.grouping().groups;
                               py::array_t<float> stats({static_cast<py::ssize_t>(groups.size()), py::ssize_t{3}});
                               auto s = stats.mutable_unchecked<2>();
                               for (size_t g = 0; g < groups.size(); ++g) {
                                 s(g, 0) = static_cast<float>(std::log1p(std::max(0.0, groups[g].flops)));
                                 s(g, 1) = static_cast<float>(std::log1p(static_cast<double>(groups[g].persistent_bytes)));
                                 s(g, 2) = static_cast<float>(std::log1p(static_cast<double>(groups[g].output_bytes)));
                               }
                               return stats;
                             })
      .def_property_readonly("allowed",
                             [](const UnitEnvironment& e) {
                               const auto& allowed = e.features().allowed;
                               py::array_t<int8_t> out({static_cast<py::ssize_t>(allowed.size()),
                                                        static_cast<py::ssize_t>(e.num_devices())});
                               auto a = out.mutable_unchecked<2>();
                               for (size_t g = 0; g < allowed.size(); ++g) {
                                 for (int32_t d = 0; d < e.num_devices(); ++d) a(g, d) = allowed[g][d] ? 1 : 0;
                               }
                               return out;
                             })
      .def_property_readonly("edges",
                             [](const UnitEnvironment& e) {
                               const auto& edges = e.grouping().edges;
                               py::array_t<int32_t> out({static_cast<py::ssize_t>(edges.size()), py::ssize_t{2}});
                               auto a = out.mutable_unchecked<2>();
                               for (size_t k = 0; k < edges.size(); ++k) {
                                 a(k, 0) = edges[k].src;
                                 a(k, 1) = edges[k].dst;
                               }
                               return out;
                             })
      .def_property_readonly("edge_bytes",
                             [](const UnitEnvironment& e) {
                               const auto& edges = e.grouping().edges;
                               py::array_t<double> out(static_cast<py::ssize_t>(edges.size()));
                               auto a = out.mutable_unchecked<1>();
                               for (size_t k = 0; k < edges.size(); ++k) a(k) = static_cast<double>(edges[k].bytes);
                               return out;
                             })
      .def_property_readonly("device_features",
                             [](const UnitEnvironment& e) {
                               // is a GPU; log10 of peak FLOP/s, usable memory bytes, memory bandwidth.
                               const auto& devices = e.cluster().devices;
                               py::array_t<float> out({static_cast<py::ssize_t>(devices.size()), py::ssize_t{4}});
                               auto a = out.mutable_unchecked<2>();
                               for (size_t d = 0; d < devices.size(); ++d) {
                                 a(d, 0) = devices[d].kind == DeviceKind::kGpu ? 1.0f : 0.0f;
                                 a(d, 1) = Log10OrZero(devices[d].peak_flops_per_s);
                                 a(d, 2) = Log10OrZero(static_cast<double>(devices[d].usable_memory_bytes()));
                                 a(d, 3) = Log10OrZero(devices[d].memory_bandwidth_bytes_per_s);
                               }
                               return out;
                             })
      .def_property_readonly("op_unit",
                             [](const UnitEnvironment& e) {
                               const auto& of = e.grouping().group_of_op;
                               return py::array_t<int32_t>(static_cast<py::ssize_t>(of.size()), of.data());
                             })
      .def(
          "placement",
          [](UnitEnvironment& e, py::handle unit_devices) {
            Placement p = e.ToPlacement(DeviceIndices(unit_devices, e.num_units(), e.num_devices(), "unit devices"));
            return py::array_t<int32_t>(static_cast<py::ssize_t>(p.size()), p.data());
          },
          py::arg("unit_devices"), "The device of each op, given a device per unit.")
      .def(
          "score",
          [](UnitEnvironment& e, py::handle unit_devices, const std::string& what) {
            std::vector<std::vector<int32_t>> rows{DeviceIndices(unit_devices, e.num_units(), e.num_devices(), what)};
            std::vector<UnitScore> scores;
            {
              py::gil_scoped_release release;
              scores = e.Score(rows);
            }
            return ScoreDict(scores.front());
          },
          py::arg("unit_devices"), py::arg("what") = "action",
          "One device per unit measured and scored: reward, ok, oom, step_time_s, memory_overflow, learning_cost.")
      .def(
          "score_batch",
          [](UnitEnvironment& e, py::handle rows_object) {
            std::vector<std::vector<int32_t>> rows = UnitRows(e, rows_object, "unit placements");
            std::vector<UnitScore> scores;
            {
              py::gil_scoped_release release;
              scores = e.Score(rows);
            }
            const py::ssize_t n = static_cast<py::ssize_t>(scores.size());
            py::array_t<double> reward(n), step(n), overflow(n), cost(n);
            py::array_t<bool> ok(n), oom(n);
            for (py::ssize_t k = 0; k < n; ++k) {
              reward.mutable_at(k) = scores[k].reward;
              step.mutable_at(k) = scores[k].ok ? scores[k].step_time_s : std::nan("");
              overflow.mutable_at(k) = scores[k].memory_overflow;
              cost.mutable_at(k) = scores[k].learning_cost;
              ok.mutable_at(k) = scores[k].ok;
              oom.mutable_at(k) = scores[k].oom;
            }
            py::dict d;
            d["reward"] = reward;
            d["ok"] = ok;
            d["oom"] = oom;
            d["step_time_s"] = step;
            d["memory_overflow"] = overflow;
            d["learning_cost"] = cost;
            return d;
          },
          py::arg("unit_placements"), "score() for an integer array [n, units], over the simulator's workers.");
}

}  // namespace devplace::python
