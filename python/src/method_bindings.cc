// devplace.methods() and devplace.place(): every method of the one method
// registry, run by RunMethod as `devplace place` runs them. Both extensions
// bind _place: _devplace's runs the baselines and searches (its registry
// has no learned runners, as in `devplace`); _devplace_learned's also runs
// the learned methods with libtorch, the same library `import torch` loads
// (learned_module.cc sets its runners). Each runs in its own copy of the
// libraries, stop request included, so the package calls one or the other
// (devplace._place), never mixes them in one call.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <csignal>
#include <cmath>
#include <filesystem>
#include <optional>

#include "bindings.h"
#include "cli/shipped_policy.h"
#include "methods/method_registry.h"
#include "methods/run_method.h"
#include "sim_results.h"
#include "simulation.h"
#include "learned/files/run_folder.h"
#include "learned/training/one_line_errors.h"
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
    case MethodKind::kLearnedSearch: return "learned_search";
  }
  return "?";
}

// The keywords of place() beyond the budget and seed: each the flag of
// `devplace place` of the same name, None where not given (the method's
// default).
struct PlaceKeywords {
  std::optional<int64_t> max_steps;
  std::optional<std::string> policy;
  std::optional<int32_t> samples_per_step;
  std::optional<double> learning_rate;
  std::optional<std::string> algorithm;
  std::optional<int32_t> workers;
  std::optional<std::string> guided_learning;
  // The run folder (`place --out`, --resume, --overwrite,
  // --checkpoint-seconds).
  std::optional<std::string> out;
  bool resume = false;
  bool overwrite = false;
  std::optional<double> checkpoint_seconds;
};

// The first file of a previous run in `dir`, or "".
std::string PreviousRunFile(const std::string& dir) {
  std::error_code error;
  for (const char* name : run_folder::kAllFiles) {
    if (std::filesystem::exists(std::filesystem::path(dir) / name, error)) return name;
  }
  return "";
}

// The run folder's rules, as `devplace place` has them for --out: checked
// before anything is written, so that a refused call leaves no file. A
// folder holding a run is refused unless resume or overwrite says what to
// do with it (a search's result can be hours of work); overwrite removes
// that run's files, so that none of them is taken for the new run's.
void PrepareRunFolder(const MethodInfo& method, const PlaceKeywords& k, LearnedOptions& options) {
  const bool keeps_checkpoint = method.kind == MethodKind::kLearned || method.kind == MethodKind::kLearnedSearch;
  if (!k.out) {
    const char* needs = k.resume ? "resume" : k.overwrite ? "overwrite" : k.checkpoint_seconds ? "checkpoint_seconds" : nullptr;
    if (needs) throw Error(std::string(needs) + " applies to a run folder: give out, the folder of the run");
    return;
  }
  const std::string& dir = *k.out;
  if (dir.empty()) throw Error("out: an empty folder name");
  if (k.resume && k.overwrite) throw Error("resume and overwrite: continue the run in out, or replace it, not both");
  if (k.resume && !keeps_checkpoint) {
    throw Error("resume: " + method.name + " keeps no checkpoint to continue (these do: " +
                MethodNames({MethodKind::kLearnedSearch, MethodKind::kLearned}) + ")");
  }
  if (k.checkpoint_seconds) {
    if (!keeps_checkpoint) {
      throw Error("checkpoint_seconds: " + method.name + " keeps no checkpoint (these do: " +
                  MethodNames({MethodKind::kLearnedSearch, MethodKind::kLearned}) + ")");
    }
    if (!(*k.checkpoint_seconds >= 0) || !std::isfinite(*k.checkpoint_seconds)) {
      throw Error("checkpoint_seconds must be a finite number of seconds, 0 or more (0: none by time), got " +
                  ShowNumber(*k.checkpoint_seconds));
    }
    options.checkpoint_seconds = *k.checkpoint_seconds;
  }
  std::error_code error;
  const auto status = std::filesystem::status(dir, error);
  if (std::filesystem::exists(status) && !std::filesystem::is_directory(status)) {
    throw Error(ForMessage(dir) + ": exists and is not a folder (out names the folder for the run's files)");
  }
  const std::string previous = k.resume || k.overwrite ? "" : PreviousRunFile(dir);
  if (!previous.empty()) {
    throw Error(ForMessage(dir) + ": holds a previous run (" + previous +
                "); resume=True continues it, overwrite=True replaces it, or choose another out");
  }
  if (k.overwrite) {
    for (const char* name : run_folder::kAllFiles) std::filesystem::remove(std::filesystem::path(dir) / name, error);
  }
  options.out_dir = dir;
  options.resume = k.resume;
}

// What only a learned placer reads, refused for a method that would ignore
// it, as the command line refuses its flags.
void RefuseKeywordsIgnored(const MethodInfo& method, const PlaceKeywords& k) {
  const bool learned = method.kind == MethodKind::kLearned;
  const char* ignored = !learned && k.max_steps ? "max_steps"
                        : !learned && k.policy ? "policy"
                        : !learned && k.samples_per_step ? "samples_per_step"
                        : !learned && k.algorithm ? "algorithm"
                        : !learned && k.workers ? "workers"
                        : nullptr;
  if (ignored) {
    throw Error(std::string(ignored) + " applies to the learned placers (" + MethodNames({MethodKind::kLearned}) + "); " +
                method.name + " does not read it" +
                (std::string(ignored) == "max_steps" ? ": its budget is max_evaluations or max_seconds" : ""));
  }
  if (k.learning_rate && !learned && method.kind != MethodKind::kLearnedSearch) {
    throw Error("learning_rate applies to the learned methods; " + method.name + " does not learn");
  }
  if (k.guided_learning && method.kind != MethodKind::kLearnedSearch) {
    throw Error("guided_learning applies to guided; " + method.name + " does not read it");
  }
}

// LearnedOptions as `devplace place` fills them from the same flags.
LearnedOptions PlaceOptions(const MethodInfo& method, int64_t max_evaluations, double max_seconds, int64_t seed,
                            const PlaceKeywords& k) {
  if (max_evaluations < 0) throw Error("max_evaluations must be 0 (the method's default) or more, got " + std::to_string(max_evaluations));
  if (!(max_seconds >= 0) || !std::isfinite(max_seconds)) {
    throw Error("max_seconds must be a finite number of seconds, 0 or more (0: no limit), got " + ShowNumber(max_seconds));
  }
  if (seed < 0) throw Error("seed must be 0 or more, got " + std::to_string(seed));
  RefuseKeywordsIgnored(method, k);
  LearnedOptions options;
  options.method = method.name;
  options.max_samples = max_evaluations;
  options.max_seconds = max_seconds;
  options.seed = static_cast<uint64_t>(seed);
  if (k.max_steps) {
    if (*k.max_steps < 0) throw Error("max_steps must be 0 or more, got " + std::to_string(*k.max_steps));
    options.max_steps = *k.max_steps;
  }
  if (k.policy) options.policy_file = *k.policy;
  if (k.samples_per_step) {
    if (*k.samples_per_step < 1 || *k.samples_per_step > 1024) {
      throw Error("samples_per_step must be 1 to 1024, got " + std::to_string(*k.samples_per_step));
    }
    options.samples_per_step = *k.samples_per_step;
  }
  if (k.learning_rate) {
    if (!(*k.learning_rate > 0) || !std::isfinite(*k.learning_rate)) {
      throw Error("learning_rate must be a finite number over 0, got " + ShowNumber(*k.learning_rate));
    }
    options.learning_rate = *k.learning_rate;
  }
  if (k.algorithm) options.algorithm = *k.algorithm;
  if (k.workers) {
    if (*k.workers < 0 || *k.workers > 256) throw Error("workers must be 0 (one per core) to 256, got " + std::to_string(*k.workers));
    options.worker_threads = *k.workers;
  }
  if (k.guided_learning) {
    if (*k.guided_learning != "regression" && *k.guided_learning != "reinforce") {
      throw Error("guided_learning must be regression or reinforce, got " + ForMessage(*k.guided_learning));
    }
    options.guided.learning = *k.guided_learning == "reinforce" ? GuidedLearning::kReinforce : GuidedLearning::kRegression;
  }
  // As `place`: guided's screen starts from the shipped one.
  options.guided.screen_file = DefaultGuidedScreen(options.guided);
  const MethodOptionsGiven given{k.algorithm.has_value(), k.learning_rate.has_value(), k.max_steps.has_value()};
  ApplyMethodDefaults(method, given, options);
  if (method.kind == MethodKind::kLearned) ChooseLearnedBudget(given, options);
  return options;
}

py::dict Place(Simulation& simulation, const std::string& method_name, int64_t max_evaluations, double max_seconds,
               int64_t seed, const PlaceKeywords& keywords) {
  const MethodInfo& method = FindMethod(method_name, {MethodKind::kBaseline, MethodKind::kSearch,
                                                      MethodKind::kLearnedSearch, MethodKind::kLearned});
  LearnedOptions options = PlaceOptions(method, max_evaluations, max_seconds, seed, keywords);
  PrepareRunFolder(method, keywords, options);
  // Ctrl-C during a search: its progress callback runs Python's signal
  // handlers; one that raises (KeyboardInterrupt) stops the search as the
  // command line's SIGINT does, and its exception is raised once the
  // method has ended. One-shot placers take no time to speak of.
  PendingPythonError interrupt;
  auto check_signals = [&interrupt] {
    if (interrupt.pending()) return;
    py::gil_scoped_acquire acquire;
    if (PyErr_CheckSignals() != 0) {
      interrupt.Fetch();
      RequestStop(SIGINT);
    }
  };
  MethodProgress progress;
  progress.search = [&check_signals](const SearchProgress&) { check_signals(); };
  progress.learned = [&check_signals](const LearnedProgress&) { check_signals(); };
  MethodOutput output;
  SimResult result;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(simulation.mutex());
    PlacementProblem problem{simulation.graph(), simulation.cluster(), simulation.cost(), simulation.simulator()};
    problem.seed = options.seed;
    try {
      // torch's exceptions (a damaged policy file) as one line.
      RunWithOneLineErrors("place", [&] { output = RunMethod(problem, method, options, progress); });
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
  out["zero_shot"] = options.zero_shot;
  if (!options.out_dir.empty()) {
    out["out"] = options.out_dir;
    out["placement_file"] = (std::filesystem::path(options.out_dir) / run_folder::kBestPlacement).string();
  }
  out["search_after"] = output.search_after.empty() ? py::object(py::none()) : py::object(py::str(output.search_after));
  out["search_evaluations"] = output.search_samples;
  out["placement_from_search"] = output.from_search;
  return out;
}

}  // namespace

void BindMethods(py::module_& m) {
  BindPlace(m);
  m.def(
      "methods",
      [] {
        py::list methods;
        for (const MethodInfo& info : ListMethods()) {
          py::dict method;
          method["name"] = info.name;
          method["kind"] = KindName(info.kind);
          method["description"] = info.description;
          method["available"] = true;
          methods.append(method);
        }
        return methods;
      },
      "Every placing method (name, kind: baseline/search/learned, description, available here).");
}

void BindPlace(py::module_& m) {
  m.def(
      "_place",
      [](Simulation& simulation, const std::string& method, int64_t max_evaluations, double max_seconds, int64_t seed,
         std::optional<int64_t> max_steps, std::optional<std::string> policy, std::optional<int32_t> samples_per_step,
         std::optional<double> learning_rate, std::optional<std::string> algorithm, std::optional<int32_t> workers,
         std::optional<std::string> guided_learning, std::optional<std::string> out, bool resume, bool overwrite,
         std::optional<double> checkpoint_seconds) {
        return Place(simulation, method, max_evaluations, max_seconds, seed,
                     {max_steps, policy, samples_per_step, learning_rate, algorithm, workers, guided_learning, out,
                      resume, overwrite, checkpoint_seconds});
      },
      py::arg("simulator"), py::arg("method"), py::arg("max_evaluations") = 0, py::arg("max_seconds") = 0.0,
      py::arg("seed") = 1, py::arg("max_steps") = py::none(), py::arg("policy") = py::none(),
      py::arg("samples_per_step") = py::none(), py::arg("learning_rate") = py::none(), py::arg("algorithm") = py::none(),
      py::arg("workers") = py::none(), py::arg("guided_learning") = py::none(), py::arg("out") = py::none(),
      py::arg("resume") = false, py::arg("overwrite") = false, py::arg("checkpoint_seconds") = py::none());
}

}  // namespace devplace::python
