// devplace report: the comparison, a placement's anatomy and, given a
// `devplace place` run, its search, as one self-contained HTML page.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/baseline_runner.h"
#include "methods/method_registry.h"
#include "cluster/cluster_json.h"
#include "report/chrome_trace.h"
#include "report/html_report.h"
#include "report/search_curve.h"
#include "util/error.h"
#include "util/files.h"

namespace devplace {
namespace {

namespace fs = std::filesystem;

struct ReportFlags {
  std::string graph;
  std::string cluster;
  std::string output;
  std::string run;
  std::vector<std::string> overlay;
  std::string trace;
  std::vector<std::string> methods;
  OpTimesFlags op_times;
  uint64_t seed = 0;
};

// The fastest placement that runs; else the fastest that at least
// simulates (an OOM one), so the report can show why.
const MethodResult* BestMethod(const Comparison& comparison) {
  const MethodResult* best = nullptr;
  for (bool must_run : {true, false}) {
    for (const MethodResult& m : comparison.methods) {
      if (m.sim.invalid || (must_run && !m.sim.ok())) continue;
      if (!best || m.sim.step_time_us < best->sim.step_time_us) best = &m;
    }
    if (best) break;
  }
  return best;
}

// What to draw the analysed placement beside: the expert's, as the 2017
// paper does, else everything on one GPU.
const MethodResult* ReferenceMethod(const Comparison& comparison, const std::string& analysed) {
  for (const char* name : {"expert", "single_gpu"}) {
    for (const MethodResult& m : comparison.methods) {
      if (m.method == name && m.method != analysed && m.sim.ok()) return &m;
    }
  }
  return nullptr;
}

// `target` as a link from a page in `page`'s folder.
std::string RelativeHref(const std::string& target, const std::string& page) {
  fs::path base = fs::absolute(page).parent_path();
  return fs::absolute(target).lexically_proximate(base).generic_string();
}

void RunReport(const ReportFlags& flags) {
  std::vector<const PlacerInfo*> placers = PlacersByName(flags.methods);
  Graph graph = ResolveGraph(flags.graph);
  Cluster cluster = ResolveCluster(flags.cluster);
  std::optional<RunFolder> run;
  if (!flags.run.empty()) run = LoadRunFolder(flags.run, graph, cluster);
  std::vector<RunFolder> overlay;
  for (const std::string& folder : flags.overlay) {
    overlay.push_back(LoadRunFolder(folder, graph, cluster));
    if (overlay.back().curve.empty()) throw Error("run '" + folder + "': has no curve.csv to overlay (a baseline run has none)");
  }
  CostModel cost = MakeCostModel(cluster, graph, flags.op_times);
  Simulator simulator(graph, cluster, cost);
  PlacementProblem problem{graph, cluster, cost, simulator, flags.seed};

  Comparison comparison = CompareMethods(problem, placers, /*progress=*/true);
  if (run && run->placement) {
    MethodResult row;
    row.method = "run";
    row.placement = *run->placement;
    row.sim = simulator.Run(row.placement);
    row.placer_seconds = run->curve.empty() ? 0 : run->curve.back().seconds;
    row.note = "best placement of " + run->path;
    comparison.methods.push_back(std::move(row));
  }
  // The run's placement is what the user came to see; without one, the best
  // baseline.
  const MethodResult* analysed = run && run->placement ? &comparison.methods.back() : BestMethod(comparison);
  if (!analysed || analysed->sim.invalid) {
    throw Error("report: no placement of " + graph.name + " on " + cluster.name + " can run (" +
                (analysed ? analysed->method + ": " + analysed->sim.reason : "every method's placement is invalid") + ")");
  }
  SimOptions with_events;
  with_events.record_events = true;
  ReportedPlacement analysed_placement{analysed->method, analysed->placement, simulator.Run(analysed->placement, with_events)};
  std::optional<ReportedPlacement> reference;
  if (const MethodResult* r = ReferenceMethod(comparison, analysed->method)) {
    reference = ReportedPlacement{r->method, r->placement, r->sim};
  }

  // Build everything, then write: a failure leaves no half a report.
  std::string trace_json;
  if (!flags.trace.empty()) trace_json = ChromeTraceJson(graph, cluster, analysed_placement.result).dump() + "\n";
  ReportInput input{graph, cluster, comparison, std::move(analysed_placement), std::move(reference),
                    run ? &*run : nullptr, flags.trace.empty() ? "" : RelativeHref(flags.trace, flags.output)};
  if (!overlay.empty() && run && !run->curve.empty()) input.overlaid.push_back(&*run);
  for (const RunFolder& r : overlay) input.overlaid.push_back(&r);
  const std::string html = HtmlReport(input);
  if (!flags.trace.empty()) WriteFileAtomically(flags.trace, trace_json);
  WriteFileAtomically(flags.output, html);
  std::fprintf(stderr, "wrote %s (%.0f KiB): %s, step time %.6f s%s\n", flags.output.c_str(), html.size() / 1024.0,
               input.analysed.label.c_str(), input.analysed.result.step_time_s(),
               flags.trace.empty() ? "" : (", trace in " + flags.trace).c_str());
}

}  // namespace

void AddReportCommand(CLI::App& app) {
  auto flags = std::make_shared<ReportFlags>();
  const std::string names = MethodNames({MethodKind::kBaseline, MethodKind::kSearch});
  CLI::App* cmd = app.add_subcommand(
      "report", "Write one self-contained HTML report: the baselines compared, the best placement (or a run's) "
                "analysed per device, its timeline and the graph coloured by device");
  cmd->add_option("--graph", flags->graph, "Graph file (JSON) or built-in model name")->required();
  cmd->add_option("--cluster", flags->cluster, "Cluster preset or cluster file")->required();
  cmd->add_option("-o,--output", flags->output, "HTML file to write")->required();
  cmd->add_option("--run", flags->run,
                  "Output folder of a `devplace place` run: adds its search curve and analyses its best placement");
  cmd->add_option("--overlay", flags->overlay,
                  "More run folders (comma-separated) whose search curves are drawn over --run's, against samples and "
                  "wall time: methods compared at the same budget")
      ->delimiter(',');
  cmd->add_option("--trace", flags->trace, "Also write the analysed step as Chrome trace JSON, linked from the report");
  cmd->add_option("--methods", flags->methods, "Baselines to compare (default: all): " + names)->delimiter(',');
  AddOpTimesFlags(cmd, &flags->op_times, "Table of measured op times that override the cost model (JSON)");
  cmd->add_option("--seed", flags->seed, "Seed for the methods that draw random numbers");
  cmd->callback([flags] { RunReport(*flags); });
}

}  // namespace devplace
