#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/inputs.h"
#include "cli/learned_commands.h"
#include "cli/learned_flags.h"
#include "cli/shipped_policy.h"
#include "cluster/cluster_json.h"
#include "exec/distributed/place_world.h"
#include "exec/executor.h"
#include "exec/measured_environment.h"
#include "placers/chain_peers.h"
#include "placers/placer.h"
#include "learned/learned_placer.h"
#include "learned/files/run_folder.h"
#include "learned/training/one_line_errors.h"
#include "methods/method_registry.h"
#include "methods/run_method.h"
#include "util/error.h"
#include "util/files.h"
#include "util/stop_request.h"

namespace devplace {
namespace {

struct PlaceFlags {
  std::string graph;
  std::string cluster;
  // Empty: the default (kDefaultMethod), which the run names.
  std::string method;
  std::string out_dir;
  OpTimesFlags op_times;
  // What judges a placement: "simulated", "measured" (the real executor) or
  // "calibrated" (the simulator with profiled op times, the best few run
  // for real now and then).
  std::string reward = "simulated";
  MeasuredEnvironmentOptions run;
  bool measure_steps_given = false;
  bool json = false;
  bool max_steps_given = false;
  bool algorithm_given = false;
  bool learning_rate_given = false;
  bool method_by_default = false;
  std::string guided_learning = "regression";  // --guided-learning
  std::string guided_screen = "shipped";       // --guided-screen
  bool guided_screen_given = false;
  // The flags given that only the learned placers read (--algorithm,
  // --samples-per-step, ...), by name: refused for a method that would
  // ignore them, so that a mistyped or misplaced flag is not silently moot.
  std::vector<std::string> policy_flags_given;
  bool overwrite = false;  // replace a previous run's files in --out
  // Across processes: evaluations between mcmc's and guided's chains
  // sharing their best (--share-every; 0: not given, the default).
  int64_t share_every = 0;
  // Across processes, a learned method: "yes" (rank 0 measures a share of
  // each batch) or "no" (the workers measure it all).
  std::string controller_measures = "yes";
  bool controller_measures_given = false;
  LearnedOptions learned;
};

// Prints a progress line at most once a second, and the last one always.
class ProgressPrinter {
 public:
  void operator()(const LearnedProgress& p) {
    auto now = std::chrono::steady_clock::now();
    if (printed_ && now - last_ < std::chrono::seconds(1)) {
      pending_ = p;
      has_pending_ = true;
      return;
    }
    Print(p);
    last_ = now;
    printed_ = true;
    has_pending_ = false;
  }
  void Flush() {
    if (has_pending_) Print(pending_);
  }

 private:
  // Step times to four significant digits, not four decimals: a graph whose
  // step takes 0.2 ms showed "best 0.0000 s".
  static void Print(const LearnedProgress& p) {
    char best[32] = "-", mean[32] = "-";
    if (p.best_step_time_s > 0) std::snprintf(best, sizeof best, "%.4g s", p.best_step_time_s);
    if (p.mean_step_time_s > 0) std::snprintf(mean, sizeof mean, "%.4g s", p.mean_step_time_s);
    std::string controllers;
    for (size_t k = 0; k < p.controller_samples.size() && p.controller_samples.size() > 1; ++k) {
      controllers += (k == 0 ? "  controllers' samples " : " + ") + std::to_string(p.controller_samples[k]);
    }
    std::fprintf(stderr, "step %6lld  best %-10s  mean %-10s  failed %3.0f%%  %6.1f samples/s  (%.0f s)%s\n",
                 static_cast<long long>(p.step), best, mean, 100 * p.failed_fraction, p.samples_per_second, p.seconds,
                 controllers.c_str());
  }
  std::chrono::steady_clock::time_point last_;
  bool printed_ = false;
  bool has_pending_ = false;
  LearnedProgress pending_;
};

// The same for a search placer's progress.
class SearchProgressPrinter {
 public:
  explicit SearchProgressPrinter(std::string method) : method_(std::move(method)) {}
  void operator()(const SearchProgress& p) {
    auto now = std::chrono::steady_clock::now();
    pending_ = p;
    has_pending_ = true;
    if (printed_ && now - last_ < std::chrono::seconds(1)) return;
    Flush();
    last_ = now;
    printed_ = true;
  }
  void Flush() {
    if (!has_pending_) return;
    char best[32] = "-", current[32] = "-";
    if (pending_.best_step_time_us > 0) std::snprintf(best, sizeof best, "%.4g s", pending_.best_step_time_us * 1e-6);
    if (pending_.current_step_time_us > 0) std::snprintf(current, sizeof current, "%.4g s", pending_.current_step_time_us * 1e-6);
    std::fprintf(stderr, "%s: %8lld evaluations  best %-10s  current %-10s  (%.0f s)\n", method_.c_str(),
                 static_cast<long long>(pending_.evaluations), best, current, pending_.seconds);
    has_pending_ = false;
  }

 private:
  std::string method_;
  std::chrono::steady_clock::time_point last_;
  bool printed_ = false;
  bool has_pending_ = false;
  SearchProgress pending_;
};

// An environment owned elsewhere (by RunPlace, so that what it measured
// outlives the trainer that asked it).
class BorrowedEnvironment : public Environment {
 public:
  explicit BorrowedEnvironment(Environment& environment) : environment_(environment) {}
  std::vector<Outcome> Measure(const std::vector<Placement>& placements, int64_t batch, int32_t stream) override {
    return environment_.Measure(placements, batch, stream);
  }
  Outcome MeasureOne(const Placement& placement) override { return environment_.MeasureOne(placement); }

 private:
  Environment& environment_;
};

// Whether the environment asks for a run across processes (WORLD_SIZE over
// 1); JoinPlaceWorld checks the rest.
bool InAWorld() {
  const char* size = std::getenv("WORLD_SIZE");
  return size && std::strtol(size, nullptr, 10) > 1;
}

// Whether this process is a worker of a world (RANK over 0); the world's
// join checks the variables.
bool WorkerInAWorld() {
  const char* rank = std::getenv("RANK");
  return InAWorld() && rank && std::strtol(rank, nullptr, 10) > 0;
}

// `place` without --method: the method BENCHMARKS.md ("Learned against
// search") shows fastest at equal samples and at equal wall time, given
// place's budgets.
constexpr const char* kDefaultMethod = "guided";

// --reward's checks on the other flags, before anything is read.
void CheckRewardFlags(const PlaceFlags& flags, bool learned) {
  if (flags.reward == "simulated") return;
  const std::string reward = "--reward " + flags.reward;
  if (!learned && flags.method != "mcmc" && flags.method != "guided") {
    throw Error(reward + " applies to the learned methods, guided and mcmc; " + ForMessage(flags.method) +
                " places in one shot (check its placement for real with devplace run)");
  }
  // Across processes each controller measures on its own rank's devices.
  if (flags.learned.controllers > 1 && !(InAWorld() && flags.reward == "measured")) {
    throw Error(reward + " runs one placement at a time on this machine's devices: --controllers must be 1" +
                (flags.reward == "measured" ? " (across processes each controller is a rank: WORLD_SIZE over 1)" : ""));
  }
  if (flags.reward == "calibrated" && flags.op_times.path.empty()) {
    throw Error(reward + " needs --op-times: the table `devplace profile` writes for this graph and cluster");
  }
}

// The first file of a previous run in `dir`, or "".
std::string PreviousRunFile(const std::string& dir) {
  std::error_code error;
  for (const char* name : run_folder::kAllFiles) {
    if (std::filesystem::exists(std::filesystem::path(dir) / name, error)) return name;
  }
  return "";
}

// Where the run writes: --out, or runs/GRAPH-CLUSTER-METHOD. A folder that
// holds a run is refused unless --resume or --overwrite says what to do
// with it: a search's result can be hours of work, and a second run used to
// replace it silently. The default folder is refused alike, not moved on to
// a new name, so that a command that reads it next (export --placement
// runs/.../best_placement.json) never reads an older run than the one just
// made.
std::string ChooseOutFolder(const PlaceFlags& flags, const std::string& default_name) {
  const std::string dir = flags.out_dir.empty() ? default_name : flags.out_dir;
  const std::string previous = flags.learned.resume || flags.overwrite ? "" : PreviousRunFile(dir);
  if (!previous.empty()) {
    throw Error(ForMessage(dir) + ": holds a previous run (" + previous +
                "); --resume continues it, --overwrite replaces it, or choose another --out");
  }
  return dir;
}

// --overwrite: the previous run's files go before the new run writes, so
// that none of them (a best placement the new run never beats) is taken
// for the new run's.
void RemovePreviousRun(const std::string& dir) {
  for (const char* name : run_folder::kAllFiles) std::filesystem::remove(std::filesystem::path(dir) / name);
}

// --out must be a folder, or not exist yet.
void RequireOutFolder(const std::string& out_dir) {
  std::error_code error;
  const auto status = std::filesystem::status(out_dir, error);
  if (std::filesystem::exists(status) && !std::filesystem::is_directory(status)) {
    throw Error(ForMessage(out_dir) + ": exists and is not a folder (--out names the folder for the run's files)");
  }
}

MethodOptionsGiven Given(const PlaceFlags& flags) {
  return {flags.algorithm_given, flags.learning_rate_given, flags.max_steps_given};
}

// guided's screen: the shipped one unless --guided-screen says otherwise
// (DefaultGuidedScreen).
void ChooseGuidedScreen(PlaceFlags& flags) {
  GuidedSearchOptions& guided = flags.learned.guided;
  if (flags.guided_screen == "none") {
    guided.screen_file.clear();
  } else if (flags.guided_screen != "shipped") {
    guided.screen_file = flags.guided_screen;
  } else if (!flags.guided_screen_given) {
    guided.screen_file = DefaultGuidedScreen(guided);
  } else {
    const std::optional<std::string> shipped = FindShippedPolicy(kShippedGuidedScreen);
    if (!shipped) throw Error(std::string("--guided-screen shipped: this build has no shipped screen (") + kShippedGuidedScreen + ")");
    guided.screen_file = *shipped;
  }
  if (!guided.screen_file.empty() && guided.learning != GuidedLearning::kRegression) {
    throw Error("--guided-screen " + ForMessage(flags.guided_screen) + ": a screen is for guided's regression screen, not --guided-learning reinforce");
  }
  // A named screen is read whole before anything is said or written.
  if (flags.guided_screen_given) CheckScreenFile(guided);
  if (!guided.screen_out.empty()) {
    if (guided.learning != GuidedLearning::kRegression) {
      throw Error("--guided-screen-out: a screen is guided's regression screen's, not --guided-learning reinforce's");
    }
    CheckWritable(guided.screen_out);
  }
}

// Every check that needs no input read: the method's name and defaults,
// the learned options, and the flags that go together. Nothing is written
// before they pass, so a refused run leaves no folder, curve, checkpoint or
// placement behind.
const MethodInfo& CheckPlaceFlags(PlaceFlags& flags) {
  if (flags.method.empty()) {
    flags.method = kDefaultMethod;
    flags.method_by_default = true;
  }
  const bool learned = IsLearnedMethod(flags.method);
  const MethodInfo& method =
      learned ? FindMethod(flags.method, {MethodKind::kLearned})
              : FindMethod(flags.method, {MethodKind::kBaseline, MethodKind::kSearch, MethodKind::kLearnedSearch});
  ApplyMethodDefaults(method, Given(flags), flags.learned);
  flags.learned.guided.learning =
      flags.guided_learning == "reinforce" ? GuidedLearning::kReinforce : GuidedLearning::kRegression;
  ChooseGuidedScreen(flags);
  if (!learned && !flags.policy_flags_given.empty()) {
    const std::string& flag = flags.policy_flags_given.front();
    throw Error(flag + " applies to the learned placers (" + MethodNames({MethodKind::kLearned}) + "); " + flags.method +
                (flags.method_by_default ? " (the default method)" : "") + " does not read it" +
                (flag == "--max-steps" ? ": its budget is --max-samples (evaluations) or --max-seconds" : ""));
  }
  if (!learned && flags.learning_rate_given && method.kind != MethodKind::kLearnedSearch) {
    throw Error("--learning-rate applies to the learned methods; " + flags.method + " does not learn");
  }
  const bool keeps_checkpoint = learned || method.kind == MethodKind::kLearnedSearch;
  if (!keeps_checkpoint && flags.learned.resume) {
    throw Error("--resume: " + ForMessage(flags.method) + " keeps no checkpoint to continue (these do: " +
                MethodNames({MethodKind::kLearnedSearch, MethodKind::kLearned}) + ")");
  }
  if (flags.learned.resume && flags.overwrite) throw Error("--resume and --overwrite: continue the run in --out, or replace it, not both");
  CheckRewardFlags(flags, learned);
  return method;
}

// The run's folder: chosen, checked, and emptied of a previous run on
// --overwrite.
void PrepareOutFolder(PlaceFlags& flags, const Graph& graph, const Cluster& cluster) {
  flags.out_dir = ChooseOutFolder(flags, "runs/" + graph.name + "-" + cluster.name + "-" + flags.method);
  RequireOutFolder(flags.out_dir);
  if (flags.overwrite && !flags.learned.resume) RemovePreviousRun(flags.out_dir);
  flags.learned.out_dir = flags.out_dir;  // a learned method's trainer creates it once its checks pass
}

// The protocol of a real run: --run-steps (or --measure-steps), the time
// limit, the inputs' seed.
MeasuredEnvironmentOptions RealRunOptions(const PlaceFlags& flags) {
  MeasuredEnvironmentOptions run = flags.run;
  run.seed = flags.learned.seed;
  if (flags.measure_steps_given) run.steps = std::max(2, flags.learned.measure_steps);
  return run;
}

// The environments of --reward that run placements for real; both empty
// under --reward simulated.
struct RealRuns {
  std::unique_ptr<MeasuredEnvironment> real;
  std::unique_ptr<CalibratedEnvironment> calibrated;  // made by the trainer's factory
  // Across processes (--reward measured): the placements the workers ran
  // on their own devices so far; empty in one process (and under
  // calibrated, whose workers only simulate).
  std::function<int64_t()> runs_on_workers;
  int64_t all_runs() const { return real->runs() + (runs_on_workers ? runs_on_workers() : 0); }
};

// --reward measured|calibrated: what runs placements on this process's
// devices (the --cluster file of this host), made before a world is joined
// so that every rank measures on its own.
void MakeRealRuns(const PlaceFlags& flags, const Graph& graph, const Cluster& cluster, RealRuns& runs) {
  if (flags.reward == "simulated") return;
  CheckClusterIsThisMachine(cluster, "--cluster " + ForMessage(flags.cluster));
  runs.real = std::make_unique<MeasuredEnvironment>(graph, cluster, RealRunOptions(flags));
}

// What judges the placements (--reward): real runs of every placement
// (measured), or of the best few now and then and the final one
// (calibrated). Sets the search's environment and the learned method's
// factory (unless a world set it: rank 0 measuring across processes);
// `runs` owns what they borrow and must outlive the run.
void SetUpEnvironment(PlaceFlags& flags, PlacementProblem& problem, RealRuns& runs) {
  if (flags.reward == "simulated") return;
  if (flags.reward == "measured") {
    problem.environment = runs.real.get();
    if (runs.runs_on_workers) return;  // rank 0 of a world: JoinPlaceWorld's factory measures across the ranks
    flags.learned.make_environment = [&runs](const Graph&, const Cluster&, const CostModel&, const SimulatedEnvironmentOptions&) {
      return std::make_unique<BorrowedEnvironment>(*runs.real);
    };
  } else if (flags.reward == "calibrated" && IsLearnedMethod(flags.method)) {
    // Rank 0 of a world: the world's environment simulates the batches
    // across the ranks, and the best few run for real here.
    EnvironmentFactory across_ranks = flags.learned.make_environment;
    flags.learned.make_environment = [&runs, across_ranks](const Graph& g, const Cluster& c, const CostModel& m,
                                                           const SimulatedEnvironmentOptions& simulated) -> std::unique_ptr<Environment> {
      CalibratedEnvironmentOptions options;
      options.simulated = simulated;
      runs.calibrated = across_ranks ? std::make_unique<CalibratedEnvironment>(across_ranks(g, c, m, simulated), options, *runs.real)
                                     : std::make_unique<CalibratedEnvironment>(g, c, m, options, *runs.real);
      return std::make_unique<BorrowedEnvironment>(*runs.calibrated);
    };
  }
}

// `place --method gdp` with no --policy, no budget and no architecture
// flags places zero-shot with the shipped policy (policies/), where a build
// has one; a budget or an architecture flag trains a fresh network, as before.
void UseShippedPolicyWhenNoneGiven(PlaceFlags& flags, const CLI::App& cmd, const std::vector<const CLI::Option*>& fixed_by_policy) {
  if (flags.learned.policy_file == "shipped") {
    // Asked for by name: with any budget (zero-shot, then guided's search).
    const std::optional<std::string> named = FindShippedPolicy(kShippedGdpPolicy);
    if (!named) throw Error(std::string("--policy shipped: this build has no shipped policy (") + kShippedGdpPolicy + ")");
    flags.learned.policy_file = *named;
    return;
  }
  if (flags.method != "gdp" || !flags.learned.policy_file.empty() || flags.learned.resume || !flags.learned.warm_start.empty()) return;
  for (const char* budget : {"--max-steps", "--max-seconds", "--max-samples"}) {
    if (cmd.count(budget) > 0) return;
  }
  for (const CLI::Option* option : fixed_by_policy) {
    if (option->count() > 0) return;
  }
  const std::optional<std::string> shipped = FindShippedPolicy(kShippedGdpPolicy);
  if (!shipped) return;
  flags.learned.policy_file = *shipped;
  if (!flags.json) {
    std::fprintf(stderr, "place: no --policy given: the shipped policy %s (a budget such as --max-seconds trains a fresh network instead; --policy shipped with it places zero-shot, then searches)\n",
                 shipped->c_str());
  }
}

// RunMethod with the progress lines on stderr (none with --json) and the
// notes after them.
MethodOutput RunWithProgress(const PlaceFlags& flags, const PlacementProblem& problem, const MethodInfo& method) {
  ProgressPrinter printer;
  SearchProgressPrinter search_printer(flags.method);
  MethodProgress progress;
  progress.learned = [&](const LearnedProgress& p) {
    if (!flags.json) printer(p);
  };
  if (!flags.json) progress.search = [&](const SearchProgress& p) { search_printer(p); };
  if (flags.method_by_default && !flags.json) {
    std::fprintf(stderr, "place: no --method given: %s (%s; --method names another)\n", flags.method.c_str(),
                 method.description.c_str());
  }
  MethodOutput output = RunMethod(problem, method, flags.learned, progress);
  if (flags.json) return output;
  printer.Flush();
  search_printer.Flush();
  if (flags.learned.zero_shot) {
    std::fprintf(stderr, "note: zero-shot with %s: no update; measured its start probes, its most likely placement and %d samples, kept the fastest\n",
                 flags.learned.policy_file.c_str(), flags.learned.samples_per_step - 1);
  }
  if (!output.note.empty()) std::fprintf(stderr, "note: %s\n", output.note.c_str());
  return output;
}

// The found placement judged once more: simulated (unless the method
// already has the simulator's result) and, with real runs, run once by the
// protocol, so that what the user gets is measured next to what the
// simulator says.
struct FinalRun {
  SimResult simulated;
  std::optional<RealRun> real;
  bool ran = false;        // it runs, as --reward judges it
  double step_time_s = 0;  // as --reward judges it; 0 unless it ran
};

FinalRun RunFinal(const PlaceFlags& flags, Simulator& simulator, MethodOutput& output, const RealRuns& runs) {
  FinalRun final_run;
  const Placement& placement = output.placement;
  if (!placement.empty()) final_run.simulated = output.result ? std::move(*output.result) : simulator.Run(placement);
  if (runs.real && !placement.empty()) final_run.real = runs.real->Run(placement);
  const bool measured = flags.reward == "measured";
  final_run.ran = !placement.empty() && (measured ? final_run.real->outcome.ok : final_run.simulated.ok());
  if (final_run.ran) final_run.step_time_s = measured ? final_run.real->outcome.step_time_s : final_run.simulated.step_time_s();
  return final_run;
}

// --reward calibrated: the placements run for real during the search, in
// remeasured.json and returned for --json.
nlohmann::json WriteRemeasured(const PlaceFlags& flags, const CalibratedEnvironment& calibrated) {
  nlohmann::json remeasured = nlohmann::json::array();
  for (const Remeasurement& r : calibrated.remeasured()) {
    remeasured.push_back({{"batches", r.batches},
                          {"simulated_s", r.simulated_s},
                          {"measured_s", r.real.outcome.ok ? nlohmann::json(r.real.outcome.step_time_s) : nlohmann::json(nullptr)},
                          {"failure", r.real.failure}});
  }
  WriteFileAtomically((std::filesystem::path(flags.out_dir) / run_folder::kRemeasured).string(), remeasured.dump(2) + "\n");
  return remeasured;
}

std::string PlacementFile(const PlaceFlags& flags) {
  return (std::filesystem::path(flags.out_dir) / run_folder::kBestPlacement).string();
}

double SamplesPerSecond(const MethodOutput& output) {
  return output.seconds > 0 ? static_cast<double>(output.samples) / output.seconds : 0.0;
}

// --json: one object on stdout.
void PrintPlaceJson(const PlaceFlags& flags, const PlacementProblem& problem, const MethodOutput& output,
                    const FinalRun& final_run, const RealRuns& runs, const nlohmann::json& remeasured) {
  const bool measured = flags.reward == "measured";
  const bool none = output.placement.empty();
  nlohmann::json out = {{"method", flags.method},
                        {"method_by_default", flags.method_by_default},
                        {"graph", problem.graph.name},
                        {"cluster", problem.cluster.name},
                        {"reward", flags.reward},
                        {"step_time_s", final_run.ran ? nlohmann::json(final_run.step_time_s) : nlohmann::json(nullptr)},
                        {"oom", none || (measured ? final_run.real->outcome.oom() : final_run.simulated.oom)},
                        {"search_seconds", output.seconds},
                        {"samples", output.samples},
                        {"samples_per_second", SamplesPerSecond(output)},
                        {"zero_shot", flags.learned.zero_shot},
                        {"stopped_early", StopRequested()},
                        {"placement_file", none ? nlohmann::json(nullptr) : nlohmann::json(PlacementFile(flags))}};
  if (IsLearnedMethod(flags.method)) {
    // The search after the learned run (the finishing search, or guided's
    // after a zero-shot placement): its share of `samples`, and whether the
    // placement is its find.
    out["search_after"] = output.search_after.empty() ? nlohmann::json(nullptr) : nlohmann::json(output.search_after);
    // Controllers across processes (--controllers): how many, and each
    // one's samples (the learned run's, in controller order).
    if (!output.controller_samples.empty()) {
      out["controllers"] = output.controller_samples.size();
      out["controller_samples"] = output.controller_samples;
    }
    out["search_samples"] = output.search_samples;
    out["placement_from_search"] = output.from_search;
  }
  if (runs.real) {
    const std::optional<RealRun>& real = final_run.real;
    out["simulated_step_time_s"] = final_run.simulated.ok() ? nlohmann::json(final_run.simulated.step_time_s()) : nlohmann::json(nullptr);
    out["measured_step_time_s"] = real && real->outcome.ok ? nlohmann::json(real->outcome.step_time_s) : nlohmann::json(nullptr);
    out["real_runs"] = runs.all_runs();
    if (runs.runs_on_workers) out["real_runs_on_workers"] = runs.runs_on_workers();
    if (IsLearnedMethod(flags.method) || measured) out["search_best_step_time_s"] = output.best_step_time_s;
    if (real && !real->outcome.ok) out["measured_failure"] = real->failure;
  }
  if (runs.calibrated) out["remeasured"] = remeasured;
  std::cout << out.dump(2) << "\n";
}

// Without --json: what was found, in a line or three on stdout.
void PrintPlaceText(const PlaceFlags& flags, const MethodOutput& output, const FinalRun& final_run, const RealRuns& runs) {
  const char* method = flags.method.c_str();
  const long long samples = output.samples;
  const std::optional<RealRun>& real = final_run.real;
  if (!final_run.ran) {
    if (output.placement.empty() && StopRequested()) {
      std::printf("%s stopped after %.1f s before it found a placement (%lld samples)\n", method, output.seconds, samples);
      return;
    }
    std::printf("%s found no placement that runs in %.1f s (%lld samples)\n", method, output.seconds, samples);
    if (real && !real->outcome.ok) std::printf("its best placement, run for real: %s\n", real->failure.c_str());
    return;
  }
  const bool measured = flags.reward == "measured";
  std::printf("%s: step time %.6f s%s after %.1f s of search (%lld samples), %.0f samples/s; placement in %s\n", method,
              final_run.step_time_s, measured ? " measured" : "", output.seconds, samples, SamplesPerSecond(output),
              PlacementFile(flags).c_str());
  if (!output.controller_samples.empty()) {
    std::string each;
    for (int64_t n : output.controller_samples) each += (each.empty() ? "" : " + ") + std::to_string(n);
    std::printf("%zu controllers across processes sharing one policy: %s samples\n", output.controller_samples.size(), each.c_str());
  }
  if (measured && final_run.simulated.ok()) {
    // A noisy search keeps its luckiest measurement: the final run is the
    // honest number, the search's best is shown beside it.
    std::printf("the simulator says %.6f s for it; the search measured it at %.6f s (%lld real runs in all)\n",
                final_run.simulated.step_time_s(), output.best_step_time_s, static_cast<long long>(runs.all_runs()));
    if (runs.runs_on_workers) {
      std::printf("%lld of them on the workers' own devices (across processes)\n", static_cast<long long>(runs.runs_on_workers()));
    }
  } else if (real) {
    if (real->outcome.ok) {
      std::printf("run for real: %.6f s (the simulator with %s says %.6f s)\n", real->outcome.step_time_s,
                  flags.op_times.path.c_str(), final_run.simulated.step_time_s());
    } else {
      std::printf("run for real, it failed: %s\n", real->failure.c_str());
    }
    if (runs.calibrated && !runs.calibrated->remeasured().empty()) {
      std::printf("%zu of the best placements run for real during the search (simulated / measured in %s)\n",
                  runs.calibrated->remeasured().size(), (std::filesystem::path(flags.out_dir) / run_folder::kRemeasured).c_str());
    }
  }
}

// --controllers across processes: the checks every rank makes alike before
// the world is joined, so that each says the same line at once.
void CheckControllersAcrossProcesses(const PlaceFlags& flags, const MethodInfo& method) {
  const int32_t controllers = flags.learned.controllers;
  if (controllers <= 1) return;
  if (method.kind != MethodKind::kLearned) {
    throw Error("--controllers " + std::to_string(controllers) + " with WORLD_SIZE over 1: controllers share a learned method's parameters (" +
                MethodNames({MethodKind::kLearned}) + "); " + flags.method + " runs one chain a rank");
  }
  const char* size = std::getenv("WORLD_SIZE");
  const long world_size = std::strtol(size, nullptr, 10);
  if (controllers > world_size) {
    throw Error("--controllers " + std::to_string(controllers) + " with WORLD_SIZE=" + std::to_string(world_size) +
                ": each controller is a rank of its own, so --controllers must be from 1 to WORLD_SIZE");
  }
  if (flags.reward == "calibrated") {
    throw Error("--reward calibrated with --controllers over 1 across processes is not built yet (rank 0 alone runs "
                "placements for real)");
  }
  LearnedOptions chosen = flags.learned;
  ChooseLearnedBudget(Given(flags), chosen);
  if (chosen.zero_shot) {
    throw Error("--controllers " + std::to_string(controllers) + " with a trained policy placing zero-shot: there is no "
                "update to share (give --max-steps or --fine-tune to train it)");
  }
}

// A controller other than rank 0 (--controllers across processes): it
// trains its copy of the policy on its own batches, measured by its group,
// and ends when rank 0 says; it prints and writes nothing (no folder, no
// finishing search: rank 0 searches from the best of all).
void RunOtherController(PlaceFlags& flags, PlacementProblem& problem, const MethodInfo& method, RealRuns& runs) {
  StopOnSignals();
  SetUpEnvironment(flags, problem, runs);
  ChooseLearnedBudget(Given(flags), flags.learned);
  flags.learned.out_dir.clear();
  // On --resume rank 0 reads the checkpoint and sends each controller its
  // state in the start.
  flags.learned.resume = false;
  flags.learned.finishing_share = 0;
  RunMethod(problem, method, flags.learned, {});
}

void RunPlace(PlaceFlags flags) {
  const MethodInfo& method = CheckPlaceFlags(flags);
  Graph graph = ResolveGraph(flags.graph);
  Cluster cluster = ResolveCluster(flags.cluster);
  CostModel cost = MakeCostModel(cluster, graph, flags.op_times);
  Simulator simulator(graph, cluster, cost);
  PlacementProblem problem{graph, cluster, cost, simulator, flags.learned.seed};
  CheckClusterCanRun(graph, cluster);
  // Under RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT: a worker measures what rank 0 sends, or runs its
  // own chain, and ends here.
  const bool chains = flags.method == "mcmc" || method.kind == MethodKind::kLearnedSearch;
  std::shared_ptr<ChainPeers> peers;
  if (flags.share_every > 0 && !chains) {
    throw Error("--share-every applies to mcmc's and guided's chains across processes; " + flags.method + " shares no chain");
  }
  if (flags.controller_measures_given && method.kind != MethodKind::kLearned) {
    throw Error("--controller-measures applies to the learned methods' batches across processes (" +
                MethodNames({MethodKind::kLearned}) + "); " + flags.method + " has none");
  }
  if (InAWorld()) {
    if (method.kind != MethodKind::kLearned && !chains) {
      throw Error("WORLD_SIZE is over 1: across processes place spreads the learned placers' batches (" +
                  MethodNames({MethodKind::kLearned}) + ") and runs mcmc's and guided's chains one a rank; " +
                  flags.method + " runs in one process (unset WORLD_SIZE; devplace compare spreads the baselines one a rank)");
    }
    if (chains && flags.learned.max_seconds > 0) {
      throw Error("--max-seconds with WORLD_SIZE over 1: " + flags.method +
                  "'s chains share their best at fixed evaluation counts, so its budget is --max-evaluations");
    }
    if (chains && flags.learned.resume) {
      throw Error("--resume with WORLD_SIZE over 1: resuming " + flags.method + "'s chains across processes is not built yet");
    }
    CheckControllersAcrossProcesses(flags, method);
  }
  RealRuns runs;
  PlaceWorldInputs world_inputs{graph, cluster, cost, flags.method, flags.reward, flags.op_times.path, flags.learned.seed, "", nullptr, "", ""};
  world_inputs.controller_measures = flags.controller_measures == "yes";
  if (InAWorld() && method.kind == MethodKind::kLearned) {
    // Across processes --controllers counts ranks, each one controller.
    world_inputs.controllers = flags.learned.controllers;
    flags.learned.controllers = 1;
  }
  if (flags.reward == "measured" && InAWorld()) {
    // Each rank measures on its own host's devices: one whose --cluster
    // is not this host's says so to every rank when they compare clusters.
    try {
      MakeRealRuns(flags, graph, cluster, runs);
    } catch (const Error& e) {
      world_inputs.cluster_problem = e.what();
    }
  } else if (!(flags.reward == "calibrated" && WorkerInAWorld())) {
    // Calibrated, a worker only simulates: rank 0 alone runs for real.
    MakeRealRuns(flags, graph, cluster, runs);
  }
  if (flags.reward == "measured") {
    world_inputs.measured = runs.real.get();
    const MeasuredEnvironmentOptions protocol = RealRunOptions(flags);
    world_inputs.measure_protocol = std::to_string(protocol.steps) + " steps, " + ShowNumber(protocol.step_time_limit_s) + " s limit";
  }
  if (chains) {
    world_inputs.share_every = flags.share_every;
    world_inputs.budget = std::to_string(flags.learned.max_samples) + " evaluations, sharing every " +
                          (flags.share_every > 0 ? std::to_string(flags.share_every) : "100 (the default)");
    if (std::optional<ChainWorld> world = JoinChainWorld(world_inputs)) {
      problem.seed = world->seed;
      problem.peers = world->peers.get();
      peers = world->peers;
      if (world->rank != 0) {
        // --reward measured: this rank's chain runs its placements on its own devices.
        if (flags.reward == "measured") problem.environment = runs.real.get();
        RunMethod(problem, method, flags.learned, {});
        return;
      }
    }
  } else {
    const PlaceRank rank = JoinPlaceWorld(world_inputs, flags.learned.make_environment,
                                          flags.reward == "measured" ? &runs.runs_on_workers : nullptr,
                                          &flags.learned.controller_ranks);
    if (rank == PlaceRank::kWorkerDone) return;
    if (rank == PlaceRank::kController) {
      RunOtherController(flags, problem, method, runs);
      return;
    }
  }
  PrepareOutFolder(flags, graph, cluster);
  // From here on a Ctrl-C stops the search and keeps what it found.
  StopOnSignals();
  SetUpEnvironment(flags, problem, runs);
  if (method.kind == MethodKind::kLearned) ChooseLearnedBudget(Given(flags), flags.learned);

  MethodOutput output = RunWithProgress(flags, problem, method);
  FinalRun final_run = RunFinal(flags, simulator, output, runs);
  nlohmann::json remeasured = nlohmann::json::array();
  if (runs.calibrated) remeasured = WriteRemeasured(flags, *runs.calibrated);
  if (flags.json) {
    PrintPlaceJson(flags, problem, output, final_run, runs, remeasured);
  } else {
    PrintPlaceText(flags, output, final_run, runs);
  }
}

}  // namespace

void AddPlaceCommand(CLI::App& app) {
  auto flags = std::make_shared<PlaceFlags>();
  LearnedOptions& learned = flags->learned;
  CLI::App* cmd = app.add_subcommand("place", LearnedCommandDescription("place"));
  cmd->add_option("--graph", flags->graph, "Graph file (JSON) or built-in model name")->required();
  cmd->add_option("--cluster", flags->cluster, "Cluster preset or cluster file")->required();
  cmd->add_option("--method", flags->method,
                  "guided (the default: mcmc with moves proposed by a scorer it learns as it searches; 2,000 evaluations "
                  "or 60 s unless given a budget), rl (the 2017 seq2seq placer), hdp (Grouper+Placer), gdp (GraphSAGE + "
                  "segment attention), mars (pre-trained GCN encoder + segment-level seq2seq; --encoder), mcmc, "
                  "or a baseline method of `devplace compare`");
  cmd->add_option("--out", flags->out_dir,
                  "Folder for best_placement.json, curve.csv and checkpoint.pt (default runs/GRAPH-CLUSTER-METHOD); "
                  "one holding a previous run is refused without --resume or --overwrite");
  cmd->add_flag("--overwrite", flags->overwrite, "Replace a previous run's files in --out (without it, such a folder is refused)");
  AddOpTimesFlags(cmd, &flags->op_times, "Table of measured op times that override the cost model (JSON)");
  cmd->add_flag("--json", flags->json, "End by printing one JSON object (method, step_time_s, oom, search_seconds, samples, placement_file)");
  cmd->add_option("--seed", learned.seed, "Seed of every random choice");

  const std::string g = "RL search";
  cmd->add_option("--max-steps", learned.max_steps, "Stop after this many policy updates")->group(g)->check(NotNegative());
  cmd->add_option("--max-seconds", learned.max_seconds,
                  "Stop after this many seconds (default 120 when no budget is given; mcmc and guided: 2,000 evaluations or 60 s)")
      ->group(g)->check(NotNegative());
  cmd->add_option("--max-samples,--max-evaluations", learned.max_samples,
                  "Stop after this many sampled placements (guided, mcmc, exact: simulator evaluations; --max-evaluations, as compare names it, is the same)")->group(g)->check(NotNegative());
  cmd->add_option("--finishing-share", learned.finishing_share,
                  "Share of a --max-samples or --max-seconds budget kept for mcmc's chain from the learned run's best "
                  "(the finishing search; 0: none; default 0.2)")
      ->group(g)->check(InRange(0.0, 0.9));
  cmd->add_option("--samples-per-step", learned.samples_per_step, "K: placements each controller samples per update")
      ->group(g)->check(InRange(1, 1024));
  cmd->add_option("--controllers", learned.controllers,
                  "Controllers sharing the parameters: in one process, threads updating asynchronously; across "
                  "processes (WORLD_SIZE over 1), groups of ranks, each led by its first, summing their gradients every update")
      ->group(g)->check(InRange(1, 64));
  cmd->add_option("--workers", learned.worker_threads, "Threads measuring each controller's placements (0 = cores / controllers)")
      ->group(g)->check(InRange(0, 256));
  cmd->add_option("--algorithm", learned.algorithm, "How the policy learns: reinforce (default for rl and hdp) or ppo (default for gdp)")->group(g);
  cmd->add_option("--ppo-epochs", learned.ppo_epochs, "PPO: passes over each batch")->group(g);
  cmd->add_option("--ppo-clip", learned.ppo_clip, "PPO: the ratio is clipped to [1 - c, 1 + c]")->group(g);
  cmd->add_option("--baseline", learned.baseline, "What rewards are compared to: moving-average (default) or batch-mean")->group(g);
  cmd->add_option("--hdp-groups", learned.hdp.groups, "HDP: groups the Grouper may use (0 = min(256, 20 x devices))")->group(g);
  cmd->add_option("--grouper-hidden", learned.hdp.grouper_hidden, "HDP: units in the Grouper's hidden layer")->group(g);
  cmd->add_option("--grouper-noise", learned.hdp.grouper_noise_std, "HDP: std of Gaussian noise on the Grouper's logits while sampling")
      ->group(g);
  cmd->add_option("--grouper-noise-steps", learned.hdp.grouper_noise_steps, "HDP: steps during which the Grouper's noise applies")
      ->group(g);
  cmd->add_option("--grouper-locality", learned.hdp.grouper_locality,
                  "HDP: starting weight of the Grouper's prior for stretches of the network (learned; 0 = the paper's Grouper)")
      ->group(g);
  const std::string gdp = "GDP";
  cmd->add_option("--policy", learned.policy_file,
                  "GDP: a policy trained by `devplace train` (\"shipped\": the one devplace ships); with no budget (or --max-steps 0) "
                  "it places zero-shot (its most likely placement and K - 1 samples, the fastest kept); with --max-samples or "
                  "--max-seconds it places zero-shot, then guided searches from there for the rest; with --max-steps or "
                  "--fine-tune it is fine-tuned")
      ->group(gdp);
  cmd->add_flag("--fine-tune", learned.fine_tune,
                "GDP: with --policy and a budget of samples or seconds, fine-tune the policy instead of searching from its zero-shot placement")
      ->group(gdp);
  std::vector<const CLI::Option*> fixed_by_policy = AddGdpNetworkFlags(cmd, learned, gdp);
  for (const CLI::Option* option : AddMarsFlags(cmd, learned, "Mars")) fixed_by_policy.push_back(option);
  const std::string guided = "guided";
  cmd->add_option("--guided-candidates", learned.guided.candidate_units, "guided: units drawn per move, whose moves the scorer ranks")
      ->group(guided)->check(InRange(1, 4096));
  cmd->add_option("--guided-uniform-share", learned.guided.uniform_share,
                  "guided: share of moves drawn uniformly among the candidates, whatever the scorer says")
      ->group(guided)->check(InRange(0.0, 1.0));
  cmd->add_option("--guided-hidden", learned.guided.hidden, "guided: units in the scorer's hidden layer")
      ->group(guided)->check(InRange(1, 4096));
  cmd->add_option("--guided-moves-per-update", learned.guided.moves_per_update, "guided: moves per update of the scorer")
      ->group(guided)->check(InRange(1, 1 << 20));
  cmd->add_option("--guided-learning", flags->guided_learning,
                  "guided: how the scorer learns: regression (default: each move's reward predicted, fitted to every "
                  "evaluated move) or reinforce (a policy over the candidates)")
      ->group(guided)
      ->check(CLI::IsMember({"regression", "reinforce"}));
  cmd->add_option("--guided-temperature", learned.guided.temperature,
                  "guided, regression: the softmax's temperature over predicted rewards (percent of step time; default 0.25)")
      ->group(guided)->check(InRange(1e-6, 1e6));
  cmd->add_option("--guided-polish", learned.guided.polish_share,
                  "guided: the last share of the budget spent as greedy descents from the best placements found "
                  "(default 0.2; 0: none)")
      ->group(guided)->check(InRange(0.0, 0.9));
  cmd->add_option("--guided-screen", flags->guided_screen,
                  "guided: where its screen starts: shipped (default: policies/guided_screen.pt, fitted on generated "
                  "graphs and clusters, where this build has it), none (a fresh screen from the seed), or a screen file "
                  "that --guided-screen-out wrote")
      ->group(guided)
      ->each([flags](const std::string&) { flags->guided_screen_given = true; });
  cmd->add_option("--guided-screen-rows", learned.guided.screen_prior_rows,
                  "guided: rows of the --guided-screen file's buffer kept as the search's first rows (default 0: its "
                  "network alone)")
      ->group(guided)->check(InRange(0, 1 << 20));
  cmd->add_option("--guided-screen-out", learned.guided.screen_out,
                  "guided: write its screen here at the end, for --guided-screen of later searches")
      ->group(guided);
  cmd->add_option("--learning-rate", learned.learning_rate, "Adam's learning rate (default 0.0003; mars: 0.003; guided: 0.01)")->group(g)->check(Positive());
  cmd->add_option("--prior-learning-rate", learned.prior_learning_rate,
                  "HDP: Adam's learning rate for the starting stay bonus and locality weight")
      ->group(g)->check(Positive());
  cmd->add_option("--lr-decay", learned.lr_decay, "Learning-rate decay factor")->group(g)->check(InRange(0.0, 1.0));
  cmd->add_option("--lr-decay-every", learned.lr_decay_every, "Steps between decays")->group(g)->check(NotNegative());
  cmd->add_option("--lr-decay-start", learned.lr_decay_start, "Step at which decay begins")->group(g)->check(NotNegative());
  cmd->add_option("--grad-clip", learned.grad_clip_norm, "Gradient norm clip")->group(g)->check(Positive());
  cmd->add_option("--baseline-decay", learned.baseline_decay, "Decay of the moving-average baseline")->group(g)->check(InRange(0.0, 1.0));
  cmd->add_option("--failing-runtime", learned.failing_runtime_s, "Seconds a failing placement counts as (reward sqrt of it); 0 = twice the all-on-CPU time")
      ->group(g)->check(NotNegative());
  cmd->add_option("--failing-signal", learned.failing_signal,
                  "What an out-of-memory placement counts as: flat (the failing runtime) or graded (times 1 + the share "
                  "of its memory that does not fit); default flat for rl, graded for hdp")
      ->group(g)
      ->check(CLI::IsMember({"flat", "graded"}));
  cmd->add_option("--cutover-step", learned.cutover_step, "After this step only placements that run update the policy")
      ->group(g)->check(NotNegative());
  cmd->add_option("--entropy-weight", learned.entropy_weight, "Weight of the entropy bonus")->group(g)->check(NotNegative());
  cmd->add_option("--logit-noise", learned.logit_noise_std, "Std of Gaussian noise on the logits while sampling")
      ->group(g)->check(NotNegative());
  cmd->add_option("--logit-noise-steps", learned.logit_noise_steps, "Steps during which logit noise applies")
      ->group(g)->check(NotNegative());
  cmd->add_option("--tanh-constant", learned.tanh_constant, "Logits become C * tanh(logits / T): C")->group(g)->check(Positive());
  cmd->add_option("--temperature", learned.temperature, "Logits become C * tanh(logits / T): T")->group(g)->check(Positive());
  cmd->add_option(
         "--stay-bias", learned.seq2seq.stay_bias,
         "Starting bonus on the logit of the device the previous group got (learned; rl: 2, hdp: measured per graph by start probes)")
      ->group(g)->check(InRange(-100.0, 100.0));
  cmd->add_option(
         "--slow-device-penalty", learned.hdp.slow_device_penalty,
         "HDP: starting penalty on the logits of devices under half the fastest's peak (learned; default: 0, "
         "or about one group in N on them once a start probe shows the fast devices hold the graph)")
      ->group(g)->check(InRange(-100.0, 100.0));
  cmd->add_option("--group-order", learned.seq2seq.group_order, "Order the policy reads the groups in: chain (each chain to its end) or topological")
      ->group(g)
      ->check(CLI::IsMember({"chain", "topological"}));
  cmd->add_option("--encoder-hidden", learned.seq2seq.encoder_hidden, "LSTM units per encoder direction")->group(g)->check(InRange(1, 4096));
  cmd->add_option("--decoder-hidden", learned.seq2seq.decoder_hidden, "LSTM units in the decoder")->group(g)->check(InRange(1, 4096));
  cmd->add_option("--jitter", learned.jitter, "Noisy environment: std of the log of op and transfer times")
      ->group(g)->check(InRange(0.0, 10.0));
  cmd->add_option("--failure-probability", learned.failure_probability, "Noisy environment: chance a measurement fails")
      ->group(g)->check(InRange(0.0, 1.0));
  cmd->add_option("--measure-steps", learned.measure_steps, "Steps per measurement; the first is dropped (the paper uses 10)")
      ->group(g)->check(InRange(1, 1000));
  const std::string r = "Reward";
  cmd->add_option("--reward", flags->reward,
                  "What judges a placement: simulated (default), measured (each run on this machine by the executor; "
                  "--cluster from clusters --detect) or calibrated (the simulator with --op-times from devplace "
                  "profile, the best few run for real now and then); learned methods and mcmc")
      ->group(r)
      ->check(CLI::IsMember({"simulated", "measured", "calibrated"}));
  cmd->add_option("--run-steps", flags->run.steps,
                  "Real runs: steps per measurement, the first dropped (default 3; --measure-steps too)")
      ->group(r)->check(InRange(2, 1000));
  cmd->add_option("--run-time-limit", flags->run.step_time_limit_s,
                  "Real runs: seconds a step may run before it counts as failed (default 30)")
      ->group(r)->check(InRange(0.001, 1e6));
  const std::string across = "Across processes (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)";
  cmd->add_option("--share-every", flags->share_every,
                  "mcmc, guided: evaluations between the chains sharing their best (default 100); fewer under "
                  "--reward measured, where an evaluation is a real run")
      ->group(across)->check(InRange(1, 1000000000));
  cmd->add_option("--controller-measures", flags->controller_measures,
                  "Learned methods: whether rank 0 measures a share of each batch (yes, the default) or leaves it all "
                  "to the workers (no: rank 0 only runs the policy, as the papers' controllers)")
      ->group(across)
      ->check(CLI::IsMember({"yes", "no"}));
  cmd->add_option("--checkpoint-every", learned.checkpoint_every, "Steps between checkpoints (0 = none by steps)")
      ->group(g)->check(NotNegative());
  cmd->add_option("--checkpoint-seconds", learned.checkpoint_seconds,
                  "Seconds of wall time between checkpoints (0 = none by time; default 30)")
      ->group(g)->check(InRange(0.0, 1e9));
  cmd->add_flag("--resume", learned.resume, "Continue the run in --out from its checkpoint")->group(g);
  cmd->add_option("--warm-start", learned.warm_start, "Imitate a baseline method, a placement file, or \"best\" (the fastest baseline) before RL")->group(g);
  cmd->add_option("--warm-start-steps", learned.warm_start_steps, "Supervised steps of the warm start")
      ->group(g)->check(NotNegative());
  // What only the learned placers read: their groups' flags, but for the
  // budget, seed, checkpoint and learning-rate flags guided reads too.
  std::vector<const CLI::Option*> policy_only;
  for (const CLI::Option* option : cmd->get_options()) {
    const std::string& group = option->get_group();
    if (group != g && group != gdp && group != "Mars") continue;
    const std::string name = option->get_name();
    if (name != "--max-seconds" && name != "--max-samples" && name != "--checkpoint-seconds" && name != "--resume" &&
        name != "--learning-rate") {
      policy_only.push_back(option);
    }
  }
  cmd->callback([flags, cmd, fixed_by_policy, policy_only] {
    // torch's (and the file system's) exceptions: one line saying what
    // was wrong, not an "internal error" with a stack trace.
    RunWithOneLineErrors("place", [&] {
      flags->max_steps_given = cmd->count("--max-steps") > 0;
      for (const CLI::Option* option : policy_only) {
        if (option->count() > 0) flags->policy_flags_given.push_back(option->get_name());
      }
      flags->algorithm_given = cmd->count("--algorithm") > 0;
      flags->controller_measures_given = cmd->count("--controller-measures") > 0;
      flags->learning_rate_given = cmd->count("--learning-rate") > 0;
      flags->measure_steps_given = cmd->count("--measure-steps") > 0 && cmd->count("--run-steps") == 0;
      UseShippedPolicyWhenNoneGiven(*flags, *cmd, fixed_by_policy);
      RefuseFlagsFixedByPolicy(fixed_by_policy, flags->learned);
      RunPlace(*flags);
    });
  });
}

}  // namespace devplace
