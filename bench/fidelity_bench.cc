// How faithful the simulator is to this machine (BENCHMARKS.md, "Fidelity";
// issue 17): for one graph on a cluster of this machine (`devplace clusters
// --detect`), random placements (the `random` placer, a seed each) and
// optimised ones (every one-shot baseline, mcmc from several seeds, and any
// placement files given), each simulated with an op-times table (`devplace
// profile`) and run for real by the executor with the papers' protocol.
//
//   build/bench/fidelity_bench --graph G.json --cluster host.json --op-times T.json
//       [--random 100] [--mcmc 8] [--mcmc-evaluations 300] [--steps 3] [--seed 1]
//       [--placements a.json,b.json] [--remeasure] [--reference-every N] [--csv out.csv]
//   build/bench/fidelity_bench ... --measured out.csv
//       # no runs: the measured times of an earlier --csv of the same graph,
//       # placements and seeds, against this binary's simulator and cluster
//       # file (a model change scored against recorded runs, free of the
//       # machine's drift between two sessions; --search-cluster and
//       # --search-op-times: the recorded run's cluster file and table, so
//       # that mcmc finds the same placements)
//
// Prints one line per placement (kind, simulated s, measured s, error) and
// a summary: the median absolute percentage error and Spearman's rank
// correlation of simulated against measured, over all placements, the
// random ones and the optimised ones.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster_json.h"
#include "exec/executor.h"
#include "graph/graph_json.h"
#include "placers/placer.h"
#include "util/csv.h"
#include "util/error.h"

namespace devplace {
namespace {

struct Sample {
  std::string kind;  // "random" or the method that made it
  double simulated_s = 0;
  double measured_s = 0;  // the mean of the runs below
  double first_run_s = 0;
  double second_run_s = 0;  // 0 without --remeasure
  double simulated_links_only_s = 0;  // the model before copies took host cores
  double simulated_no_wake_s = 0;     // the model without the devices' wake-ups
  // How much slower than at the profile the machine ran when each run
  // ran: measured over simulated of the profiled device's one-device
  // placement, run now and then (1 without --reference-every).
  double first_slowdown = 1;
  double second_slowdown = 1;
  // measured_s with each run divided by its slowdown: what the machine
  // would have measured at the profile's speed.
  double steady_measured_s() const {
    return second_run_s > 0 ? (first_run_s / first_slowdown + second_run_s / second_slowdown) / 2 : first_run_s / first_slowdown;
  }
};

// The measured columns of an earlier run's --csv, in its order.
std::vector<Sample> ReadMeasuredCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read " + path);
  std::string line;
  std::getline(in, line);  // the header
  std::vector<Sample> rows;
  for (int64_t row = 2; std::getline(in, line); ++row) {
    const std::vector<std::string> cells = SplitCsvLine(line);
    const std::string where = path + ": line " + std::to_string(row);
    if (cells.size() != 8) throw Error(where + " has " + std::to_string(cells.size()) + " cells, not 8");
    Sample s;
    s.kind = cells[0];
    for (auto [cell, value] : {std::pair{2, &s.measured_s}, {3, &s.first_run_s}, {4, &s.second_run_s},
                               {6, &s.first_slowdown}, {7, &s.second_slowdown}}) {
      if (!ParseCsvNumber(cells[cell], *value) || !std::isfinite(*value) || *value < 0) {
        throw Error(where + ": cell " + std::to_string(cell + 1) + " is not a finite number at least 0");
      }
    }
    // Errors divide by these.
    if (s.measured_s <= 0 || s.first_slowdown <= 0 || s.second_slowdown <= 0) throw Error(where + ": a time or slowdown of 0");
    rows.push_back(s);
  }
  return rows;
}

// The machine's slowdown over a benchmark: the reference placement
// measured before, between and after the placements' runs, by run index.
class SlowdownTrack {
 public:
  void Add(int64_t run_index, double slowdown) { points_.push_back({run_index, slowdown}); }
  bool empty() const { return points_.empty(); }
  // Linear between the reference runs around `run_index`.
  double At(int64_t run_index) const {
    if (points_.empty()) return 1;
    if (run_index <= points_.front().first) return points_.front().second;
    for (size_t i = 1; i < points_.size(); ++i) {
      if (run_index <= points_[i].first) {
        const auto [a, sa] = points_[i - 1];
        const auto [b, sb] = points_[i];
        return sa + (sb - sa) * static_cast<double>(run_index - a) / static_cast<double>(b - a);
      }
    }
    return points_.back().second;
  }
  std::pair<double, double> range() const {
    double lo = INFINITY, hi = 0;
    for (const auto& [index, value] : points_) lo = std::min(lo, value), hi = std::max(hi, value);
    return {lo, hi};
  }

 private:
  std::vector<std::pair<int64_t, double>> points_;
};

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Average ranks (ties share the mean of their ranks), 1-based.
std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> ranks(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = (i + j) / 2.0 + 1;
    i = j + 1;
  }
  return ranks;
}

// Spearman's rho: Pearson's correlation of the ranks.
double Spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 3) return NAN;
  const std::vector<double> ra = Ranks(a), rb = Ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : NAN;
}

void Summarise(const char* label, const std::vector<Sample>& samples, bool random_only, bool optimised_only,
               bool steady) {
  std::vector<double> errors, simulated, measured, first, second, rerun_errors, before_errors, before, steady_errors,
      steady_measured, no_wake_errors, no_wake_steady_errors;
  for (const Sample& s : samples) {
    const bool random = s.kind == "random";
    if ((random_only && !random) || (optimised_only && random)) continue;
    errors.push_back(std::abs(s.simulated_s - s.measured_s) / s.measured_s);
    simulated.push_back(s.simulated_s);
    before_errors.push_back(std::abs(s.simulated_links_only_s - s.measured_s) / s.measured_s);
    before.push_back(s.simulated_links_only_s);
    measured.push_back(s.measured_s);
    steady_measured.push_back(s.steady_measured_s());
    steady_errors.push_back(std::abs(s.simulated_s - s.steady_measured_s()) / s.steady_measured_s());
    no_wake_errors.push_back(std::abs(s.simulated_no_wake_s - s.measured_s) / s.measured_s);
    no_wake_steady_errors.push_back(std::abs(s.simulated_no_wake_s - s.steady_measured_s()) / s.steady_measured_s());
    if (s.second_run_s > 0) {
      first.push_back(s.first_run_s);
      second.push_back(s.second_run_s);
      rerun_errors.push_back(std::abs(s.second_run_s - s.first_run_s) / s.first_run_s);
    }
  }
  std::vector<double> ratio(simulated.size());
  for (size_t i = 0; i < ratio.size(); ++i) ratio[i] = simulated[i] / measured[i];
  std::printf("%-10s n %4zu  median |error| %6.1f %%  spearman %.3f  median simulated/measured %.3f", label,
              errors.size(), 100 * Median(errors), Spearman(simulated, measured), Median(ratio));
  // The noise floor: the same placements run twice. No simulator can rank
  // placements better than the machine ranks them against itself.
  if (!first.empty()) {
    std::printf("  | run vs rerun: median |diff| %5.1f %%  spearman %.3f", 100 * Median(rerun_errors),
                Spearman(first, second));
  }
  std::printf("\n%-10s copies on links only (before the host-core copy model): median |error| %6.1f %%  spearman %.3f\n",
              "", 100 * Median(before_errors), Spearman(before, measured));
  std::printf("%-10s without wake-ups (before them): median |error| %6.1f %%", "", 100 * Median(no_wake_errors));
  if (steady) std::printf(", at the profile's machine speed %6.1f %%", 100 * Median(no_wake_steady_errors));
  std::printf("\n");
  if (steady) {
    std::printf("%-10s at the profile's machine speed (runs over the reference's speed then): median |error| %6.1f %%  "
                "spearman %.3f\n",
                "", 100 * Median(steady_errors), Spearman(simulated, steady_measured));
  }
}

int Run(int argc, char** argv) {
  CLI::App app{"simulated against measured step times of random and optimised placements"};
  std::string graph_path, cluster_path, op_times_path, placements, csv, measured_csv, search_cluster_path,
      search_op_times_path;
  int32_t random = 100, mcmc = 8, steps = 3;
  int64_t mcmc_evaluations = 300;
  uint64_t seed = 1;
  bool remeasure = false;
  int32_t reference_every = 0;
  app.add_option("--graph", graph_path)->required();
  app.add_option("--cluster", cluster_path)->required();
  app.add_option("--op-times", op_times_path, "the table devplace profile wrote; without it the roofline");
  app.add_option("--random", random);
  app.add_option("--mcmc", mcmc, "mcmc runs, a seed each");
  app.add_option("--mcmc-evaluations", mcmc_evaluations);
  app.add_option("--steps", steps)->check(CLI::Range(2, 100));
  app.add_option("--seed", seed);
  app.add_option("--placements", placements, "more placement files, comma-separated (learned placers')");
  app.add_option("--csv", csv, "also write every sample here");
  app.add_option("--measured", measured_csv,
                 "run nothing: take the measured times from this earlier --csv of the same graph, placements and seeds");
  app.add_option("--search-cluster", search_cluster_path,
                 "the cluster file the placers search with (default: --cluster): the recorded run's, with --measured");
  app.add_option("--search-op-times", search_op_times_path,
                 "with --measured: the recorded run's op-times table, so that mcmc finds the same placements");
  app.add_flag("--remeasure", remeasure,
               "run every placement a second time, after all the first runs: the machine's own noise, and the "
               "measured time becomes the mean of the two");
  app.add_option("--reference-every", reference_every,
                 "run the profiled device's one-device placement before the first run, after every N runs and "
                 "after the last, and also report errors against the machine's speed then (the machine drifts: "
                 "its speed varies by 10-20 % over minutes)")
      ->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);

  const std::vector<Sample> recorded = measured_csv.empty() ? std::vector<Sample>{} : ReadMeasuredCsv(measured_csv);
  bool recorded_slowdowns = false;
  for (const Sample& r : recorded) recorded_slowdowns = recorded_slowdowns || r.first_slowdown != 1 || r.second_slowdown != 1;
  const Graph graph = LoadGraphFile(graph_path);
  const Cluster cluster = ResolveCluster(cluster_path);
  OpTimeTable table;
  if (!op_times_path.empty()) table = OpTimeTable::Load(op_times_path);
  const CostModel cost(cluster, table);
  Simulator simulator(graph, cluster, cost);
  Simulator links_only(graph, cluster, cost);
  links_only.set_copies_use_host_cores(false);
  // The model without wake-ups: the same simulator where no device has one.
  Cluster no_wake_cluster = cluster;
  for (Device& d : no_wake_cluster.devices) d.wake_up_us = 0;
  no_wake_cluster.Finalize(cluster_path);
  const CostModel no_wake_cost(no_wake_cluster, table);
  std::optional<Simulator> own_no_wake;
  if (std::any_of(cluster.devices.begin(), cluster.devices.end(), [](const Device& d) { return d.wake_up_us > 0; })) {
    own_no_wake.emplace(graph, no_wake_cluster, no_wake_cost);
  }
  Simulator& no_wake = own_no_wake ? *own_no_wake : simulator;
  Executor executor(graph, cluster);
  // The placers search with the cluster the recorded runs were searched
  // with, so that a changed model scores the same placements.
  std::optional<Cluster> recorded_cluster;
  std::optional<CostModel> recorded_cost;
  std::optional<Simulator> recorded_simulator;
  if (!search_cluster_path.empty() || !search_op_times_path.empty()) {
    recorded_cluster.emplace(search_cluster_path.empty() ? cluster : ResolveCluster(search_cluster_path));
    recorded_cost.emplace(*recorded_cluster, search_op_times_path.empty() ? table : OpTimeTable::Load(search_op_times_path));
    recorded_simulator.emplace(graph, *recorded_cluster, *recorded_cost);
  }
  const Cluster& search_cluster = recorded_cluster ? *recorded_cluster : cluster;
  const CostModel& search_cost = recorded_cost ? *recorded_cost : cost;
  Simulator& search_simulator = recorded_simulator ? *recorded_simulator : simulator;

  std::vector<std::pair<std::string, Placement>> candidates;
  for (int32_t i = 0; i < random; ++i) {
    PlacementProblem problem{graph, search_cluster, search_cost, search_simulator, seed + static_cast<uint64_t>(i)};
    candidates.emplace_back("random", FindPlacer("random").place(problem).placement);
  }
  {
    PlacementProblem problem{graph, search_cluster, search_cost, search_simulator, seed};
    for (const char* name : {"single_cpu", "expert", "scotch", "mincut", "metis", "m_topo", "m_etf", "m_sct",
                             "dp_split"}) {
      try {
        candidates.emplace_back(name, FindPlacer(name).place(problem).placement);
      } catch (const Error& e) {
        std::fprintf(stderr, "%s refused: %s\n", name, e.what());
      }
    }
    for (int32_t d = 1; d < cluster.num_devices(); ++d) {
      candidates.emplace_back("single:" + cluster.devices[d].name, SingleDevicePlacement(graph, cluster, d));
    }
  }
  for (int32_t i = 0; i < mcmc; ++i) {
    PlacementProblem problem{graph, search_cluster, search_cost, search_simulator, seed + 1000 + static_cast<uint64_t>(i)};
    problem.budget.max_evaluations = mcmc_evaluations;
    candidates.emplace_back("mcmc", FindPlacer("mcmc").place(problem).placement);
  }
  for (size_t start = 0; start < placements.size();) {
    size_t comma = placements.find(',', start);
    if (comma == std::string::npos) comma = placements.size();
    const std::string path = placements.substr(start, comma - start);
    candidates.emplace_back("file:" + path, LoadPlacementFile(path, graph, cluster));
    start = comma + 1;
  }

  std::vector<Sample> samples;
  std::ofstream out;
  if (!csv.empty()) {
    out.open(csv);
    out << "kind,simulated_s,measured_s,first_run_s,second_run_s,simulated_links_only_s,first_slowdown,second_slowdown\n";
  }
  std::vector<const Placement*> ran;
  // The reference: every op on the device the profile timed (the first of
  // its kind), whose simulated step is the profile's own measurement.
  SlowdownTrack slowdown;
  int64_t runs = 0;
  const Placement reference = SingleDevicePlacement(graph, cluster, 0);
  const double reference_simulated_us = simulator.Run(reference).step_time_us;
  auto measure_reference = [&] {
    const ExecMeasurement real = MeasureRealStepTime(executor, reference, steps);
    if (real.protocol.ok && reference_simulated_us > 0) {
      slowdown.Add(runs, real.protocol.mean_step_time_us / reference_simulated_us);
    }
  };
  auto after_run = [&] {
    ++runs;
    if (reference_every > 0 && runs % reference_every == 0) measure_reference();
  };
  if (reference_every > 0 && recorded.empty()) measure_reference();
  std::vector<int64_t> first_run_index;
  for (const auto& [kind, placement] : candidates) {
    const SimResult simulated = simulator.Run(placement);
    if (!simulated.ok()) {
      std::printf("%-24s simulated: %s (left out)\n", kind.c_str(), simulated.reason.c_str());
      continue;
    }
    if (!recorded.empty()) {
      if (samples.size() >= recorded.size() || recorded[samples.size()].kind != kind) {
        throw Error(measured_csv + ": its rows do not follow this run's placements (at " + kind + ")");
      }
      Sample s = recorded[samples.size()];
      s.simulated_s = simulated.step_time_s();
      s.simulated_links_only_s = links_only.Run(placement).step_time_s();
      s.simulated_no_wake_s = no_wake.Run(placement).step_time_s();
      std::printf("%-24s simulated %.6f s  measured %.6f s  error %+6.1f %%\n", kind.c_str(), s.simulated_s,
                  s.measured_s, 100 * (s.simulated_s - s.measured_s) / s.measured_s);
      samples.push_back(s);
      continue;
    }
    const ExecMeasurement real = MeasureRealStepTime(executor, placement, steps);
    after_run();
    if (!real.protocol.ok) {
      std::printf("%-24s run failed: %s (left out)\n", kind.c_str(), real.last.result.reason.c_str());
      continue;
    }
    first_run_index.push_back(runs - 1);
    Sample s{kind, simulated.step_time_s(), real.protocol.mean_step_time_us * 1e-6};
    s.first_run_s = s.measured_s;
    s.simulated_links_only_s = links_only.Run(placement).step_time_s();
    s.simulated_no_wake_s = no_wake.Run(placement).step_time_s();
    std::printf("%-24s simulated %.6f s  measured %.6f s  error %+6.1f %%\n", kind.c_str(), s.simulated_s,
                s.measured_s, 100 * (s.simulated_s - s.measured_s) / s.measured_s);
    std::fflush(stdout);
    samples.push_back(s);
    ran.push_back(&placement);
  }
  // The second runs come after all the first ones, so that a slow spell of
  // the machine does not hit both runs of one placement.
  std::vector<int64_t> second_run_index(samples.size(), -1);
  if (!recorded.empty() && samples.size() != recorded.size()) {
    throw Error(measured_csv + ": " + std::to_string(recorded.size()) + " rows for " + std::to_string(samples.size()) + " placements");
  }
  for (size_t i = 0; recorded.empty() && remeasure && i < samples.size(); ++i) {
    const ExecMeasurement real = MeasureRealStepTime(executor, *ran[i], steps);
    after_run();
    if (!real.protocol.ok) continue;
    second_run_index[i] = runs - 1;
    samples[i].second_run_s = real.protocol.mean_step_time_us * 1e-6;
    samples[i].measured_s = (samples[i].first_run_s + samples[i].second_run_s) / 2;
  }
  if (recorded.empty() && reference_every > 0 && runs % reference_every != 0) measure_reference();
  for (size_t i = 0; recorded.empty() && i < samples.size(); ++i) {
    samples[i].first_slowdown = slowdown.At(first_run_index[i]);
    if (second_run_index[i] >= 0) samples[i].second_slowdown = slowdown.At(second_run_index[i]);
  }
  for (const Sample& s : samples) {
    if (out) {
      out << s.kind << "," << s.simulated_s << "," << s.measured_s << "," << s.first_run_s << "," << s.second_run_s
          << "," << s.simulated_links_only_s << "," << s.first_slowdown << "," << s.second_slowdown << "\n";
    }
  }
  std::printf("graph %s (%d ops), cluster %s, op times %s, %d steps a run\n", graph.name.c_str(), graph.num_ops(),
              cluster.name.c_str(), op_times_path.empty() ? "(roofline)" : op_times_path.c_str(), steps);
  if (!slowdown.empty()) {
    const auto [slowest, fastest] = slowdown.range();
    std::printf("machine slowdown (reference measured over simulated, every %d runs): %.3f to %.3f\n", reference_every,
                slowest, fastest);
  }
  const bool slowdowns = !slowdown.empty() || recorded_slowdowns;
  Summarise("all", samples, false, false, slowdowns);
  Summarise("random", samples, true, false, slowdowns);
  Summarise("optimised", samples, false, true, slowdowns);
  return 0;
}

}  // namespace
}  // namespace devplace

int main(int argc, char** argv) {
  try {
    return devplace::Run(argc, argv);
  } catch (const devplace::Error& e) {
    std::fprintf(stderr, "fidelity_bench: error: %s\n", e.what());
    return 1;
  }
}
