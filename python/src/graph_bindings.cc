// devplace.Graph and devplace.Cluster: what every --graph and --cluster
// argument of the command line takes, read by the command line's own code.
#include <pybind11/stl.h>

#include "bindings.h"
#include "cli/inputs.h"
#include "cluster/cluster_generator.h"
#include "cluster/cluster_json.h"
#include "cluster/presets.h"
#include "graph/grouping.h"
#include "models/registry.h"
#include "util/error.h"

namespace py = pybind11;

namespace devplace::python {
namespace {

// Keyword arguments as a built-in model's parameters (what `devplace
// generate MODEL --NAME VALUE` takes); the model checks names and ranges.
ModelParams ParamsOf(const std::string& source, const py::kwargs& kwargs) {
  ModelParams params;
  for (const auto& [key, value] : kwargs) {
    const std::string name = py::str(key);
    if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value)) {
      throw Error("graph '" + ForMessage(source) + "': parameter " + ForMessage(name) + " must be an integer, got " +
                  ForMessage(std::string(py::str(py::type::of(value).attr("__name__")))));
    }
    try {
      params[name] = value.cast<int64_t>();
    } catch (const py::cast_error&) {
      throw Error("graph '" + ForMessage(source) + "': parameter " + ForMessage(name) + " is out of int64's range");
    }
  }
  return params;
}

std::shared_ptr<Graph> MakeGraph(const std::string& source, const py::kwargs& kwargs) {
  ModelParams params = ParamsOf(source, kwargs);
  py::gil_scoped_release release;  // a million-op model takes seconds to build
  if (!params.empty()) {
    if (!IsModelName(source)) {
      throw Error("graph '" + ForMessage(source) + "': parameters are for built-in models only (devplace.models())");
    }
    return std::make_shared<Graph>(MakeModel(source, params));
  }
  return std::make_shared<Graph>(ResolveGraph(source));
}

py::dict DeviceDict(const Device& device) {
  py::dict d;
  d["name"] = device.name;
  d["kind"] = DeviceKindName(device.kind);
  d["peak_flops_per_s"] = device.peak_flops_per_s;
  d["memory_bandwidth_bytes_per_s"] = device.memory_bandwidth_bytes_per_s;
  d["memory_bytes"] = device.memory_bytes;
  d["usable_memory_bytes"] = device.usable_memory_bytes();
  d["parallel_ops"] = device.parallel_ops;
  // Where it runs on this machine (a detected cluster): the cores a CPU
  // device owns, a GPU's CUDA index; empty / -1 for a modelled device.
  d["cores"] = device.cores;
  d["cuda_index"] = device.cuda_index;
  return d;
}

}  // namespace

void BindGraphs(py::module_& m) {
  py::class_<Graph, std::shared_ptr<Graph>>(m, "Graph",
                                            "A training step's graph: a built-in model's name (its parameters as "
                                            "keywords, e.g. Graph('synthetic', ops=500)), a graph file (JSON) or "
                                            "an ONNX file, as --graph takes them.")
      .def(py::init(&MakeGraph), py::arg("source"))
      // Immutable from Python: a copy (copy.deepcopy of a placed module
      // holding its graph) is the same object.
      .def("__copy__", [](const std::shared_ptr<Graph>& g) { return g; })
      .def("__deepcopy__", [](const std::shared_ptr<Graph>& g, const py::dict&) { return g; })
      .def_readonly("name", &Graph::name)
      .def_property_readonly("num_ops", &Graph::num_ops)
      .def_property_readonly("op_names",
                             [](const Graph& g) {
                               std::vector<std::string> names;
                               names.reserve(g.num_ops());
                               for (const Op& op : g.ops()) names.push_back(op.name);
                               return names;
                             })
      .def_property_readonly("op_types",
                             [](const Graph& g) {
                               std::vector<std::string> types;
                               types.reserve(g.num_ops());
                               for (const Op& op : g.ops()) types.push_back(op.type);
                               return types;
                             })
      .def_property_readonly("total_flops", &Graph::total_flops)
      .def_property_readonly("total_persistent_bytes", &Graph::total_persistent_bytes)
      .def("__repr__", [](const Graph& g) {
        return "<devplace.Graph '" + ForMessage(g.name) + "': " + std::to_string(g.num_ops()) + " ops>";
      });

  py::class_<Cluster, std::shared_ptr<Cluster>>(m, "Cluster",
                                                "Devices and links: a preset's name (devplace.cluster_presets()) "
                                                "or a cluster file, as --cluster takes them.")
      .def(py::init([](const std::string& source) { return std::make_shared<Cluster>(ResolveCluster(source)); }),
           py::arg("source"))
      .def("__copy__", [](const std::shared_ptr<Cluster>& c) { return c; })
      .def("__deepcopy__", [](const std::shared_ptr<Cluster>& c, const py::dict&) { return c; })
      .def_readonly("name", &Cluster::name)
      .def_property_readonly("num_devices", &Cluster::num_devices)
      .def_property_readonly("device_names",
                             [](const Cluster& c) {
                               std::vector<std::string> names;
                               for (const Device& d : c.devices) names.push_back(d.name);
                               return names;
                             })
      .def_property_readonly("devices",
                             [](const Cluster& c) {
                               py::list devices;
                               for (const Device& d : c.devices) devices.append(DeviceDict(d));
                               return devices;
                             })
      .def("__repr__", [](const Cluster& c) {
        return "<devplace.Cluster '" + ForMessage(c.name) + "': " + std::to_string(c.num_devices()) + " devices>";
      });

  m.def(
      "models",
      [] {
        py::list models;
        for (const ModelInfo& info : ListModels()) {
          py::dict params;
          for (const ModelParam& p : info.params) params[py::str(p.name)] = py::make_tuple(p.min, p.max);
          py::dict model;
          model["name"] = info.name;
          model["description"] = info.description;
          model["params"] = params;
          models.append(model);
        }
        return models;
      },
      "The built-in models: name, description and each parameter's (min, max).");
  m.def(
      "generate_cluster",
      [](uint64_t seed, const std::string& profile, int32_t devices, int32_t min_devices, int32_t max_devices,
         bool include_cpu) {
        const std::optional<ClusterProfile> parsed = ParseClusterProfile(profile);
        if (!parsed) throw Error("profile: unknown cluster profile '" + ForMessage(profile) + "' (mixed, hetero or tight)");
        ClusterGeneratorOptions options = ClusterGeneratorOptions::ForProfile(*parsed);
        if (devices > 0) {
          options.min_devices = devices;
          options.max_devices = devices;
        } else {
          if (min_devices > 0) options.min_devices = min_devices;
          if (max_devices > 0) options.max_devices = max_devices;
        }
        options.include_cpu = include_cpu;
        CheckClusterGeneratorOptions(options);
        return std::make_shared<Cluster>(GenerateCluster(options, seed));
      },
      py::arg("seed"), py::arg("profile") = "mixed", py::arg("devices") = 0, py::arg("min_devices") = 0,
      py::arg("max_devices") = 0, py::arg("include_cpu") = true,
      "A random cluster as `devplace generate cluster` draws it: the same seed and options give the same cluster "
      "(profile mixed, hetero or tight; devices, or min_devices..max_devices, count the CPU; 0 takes the profile's "
      "range).");
  m.def(
      "cluster_presets",
      [] {
        py::list presets;
        for (const ClusterPresetInfo& info : ListClusterPresets()) {
          py::dict preset;
          preset["name"] = info.name;
          preset["description"] = info.description;
          presets.append(preset);
        }
        return presets;
      },
      "The built-in clusters: name and description.");
}

}  // namespace devplace::python
