// guided against mcmc on one graph and cluster with the same evaluation
// budget and seed: step times and wall time of each (bench/guided_table.sh).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli/inputs.h"
#include "cluster/cluster_json.h"
#include "learned/search/guided_search.h"
#include "placers/placer.h"
#include "sim/simulator.h"

using namespace devplace;

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: guided_vs_mcmc GRAPH CLUSTER EVALUATIONS SEED [SECONDS]\n");
    return 2;
  }
  try {
    const Graph graph = ResolveGraph(argv[1]);
    const Cluster cluster = ResolveCluster(argv[2]);
    const CostModel cost(cluster);
    SearchBudget budget;
    budget.max_evaluations = std::atoll(argv[3]);
    if (argc > 5) budget.max_seconds = std::atof(argv[5]);
    const uint64_t seed = std::strtoull(argv[4], nullptr, 10);
    // Settings to try, from the environment (bench only).
    GuidedSearchOptions guided;
    if (const char* v = std::getenv("GUIDED_LR")) guided.learning_rate = std::atof(v);
    if (const char* v = std::getenv("GUIDED_CANDIDATES")) guided.candidate_units = std::atoi(v);
    if (const char* v = std::getenv("GUIDED_UNIFORM")) guided.uniform_share = std::atof(v);
    if (const char* v = std::getenv("GUIDED_BATCH")) guided.moves_per_update = std::atoi(v);
    if (const char* v = std::getenv("GUIDED_HIDDEN")) guided.hidden = std::atoi(v);
    if (const char* v = std::getenv("GUIDED_REGRESSION")) {
      guided.learning = std::atoi(v) ? GuidedLearning::kRegression : GuidedLearning::kReinforce;
    }
    if (const char* v = std::getenv("GUIDED_TEMPERATURE")) guided.temperature = std::atof(v);
    if (const char* v = std::getenv("GUIDED_TRAIN_STEPS")) guided.train_steps = std::atoi(v);
    if (const char* v = std::getenv("GUIDED_BATCH_ROWS")) guided.batch_rows = std::atoi(v);
    if (const char* v = std::getenv("GUIDED_HISTORY")) guided.read_history = std::atoi(v) != 0;
    if (const char* v = std::getenv("GUIDED_PAIRS")) guided.pair_moves = std::atoi(v) != 0;
    if (const char* v = std::getenv("GUIDED_SCREEN")) {
      const std::string target = v;
      guided.screen_target = target == "reward"     ? GuidedScreenTarget::kReward
                             : target == "accepted" ? GuidedScreenTarget::kAcceptedChange
                                                    : GuidedScreenTarget::kRewardUnlessRefused;
    }
    if (const char* v = std::getenv("GUIDED_POLISH")) guided.polish_share = std::atof(v);
    if (const char* v = std::getenv("GUIDED_POLISH_CANDIDATES")) guided.polish_candidate_units = std::atoi(v);
    if (const char* v = std::getenv("GUIDED_COLDNESS")) guided.coldness = guided.coldness_end = std::atof(v);
    if (const char* v = std::getenv("GUIDED_COLDNESS_END")) guided.coldness_end = std::atof(v);
    if (const char* v = std::getenv("GUIDED_BUSIEST")) guided.busiest_share = std::atof(v);
    // The screen place starts from (the shipped one, run from the source
    // tree's root, as bench/guided_table.sh does); GUIDED_SCREEN_FILE=none: a fresh one.
    const char* screen = std::getenv("GUIDED_SCREEN_FILE");
    guided.screen_file = screen ? screen : "policies/guided_screen.pt";
    if (guided.screen_file == "none" || (!screen && !std::filesystem::exists(guided.screen_file))) guided.screen_file.clear();
    if (const char* v = std::getenv("GUIDED_SCREEN_ROWS")) guided.screen_prior_rows = std::atoi(v);
    if (const char* v = std::getenv("GUIDED_SCREEN_OUT")) guided.screen_out = v;
    const bool only_guided = std::getenv("GUIDED_ONLY") != nullptr;
    const bool only_mcmc = std::getenv("MCMC_ONLY") != nullptr;
    for (const std::string method : {"mcmc", "guided"}) {
      if (only_guided && method == "mcmc") continue;
      if (only_mcmc && method == "guided") continue;
      Simulator sim(graph, cluster, cost);
      PlacementProblem problem{graph, cluster, cost, sim, seed, budget};
      const auto started = std::chrono::steady_clock::now();
      PlacerOutput out = method == "mcmc" ? FindPlacer("mcmc").place(problem) : PlaceGuided(problem, guided);
      const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      const SimResult result = out.result ? *out.result : sim.Run(out.placement);
      std::printf("%s %s %s seed=%llu %s step_s=%.5f evals=%lld wall_s=%.2f evals_per_s=%.0f | %s\n", argv[1], argv[2],
                  method.c_str(), static_cast<unsigned long long>(seed), result.ok() ? "ok" : "FAIL",
                  result.step_time_s(), static_cast<long long>(out.evaluations), wall_s, out.evaluations / wall_s,
                  out.note.c_str());
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "guided_vs_mcmc: %s\n", e.what());
    return 1;
  }
}
