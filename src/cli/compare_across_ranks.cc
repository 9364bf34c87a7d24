#include "cli/compare_across_ranks.h"

#include <nlohmann/json.hpp>

#include "exec/distributed/compare_world.h"
#include "util/error.h"

namespace devplace {

std::string EncodeComparedMethod(const ComparedMethod& compared) {
  nlohmann::json message;
  if (compared.row) {
    message["method"] = compared.row->method;
    message["placement"] = compared.row->placement;
    message["placer_seconds"] = compared.row->placer_seconds;
    message["note"] = compared.row->note;
  } else if (compared.refused) {
    message["method"] = compared.refused->method;
    message["refused"] = compared.refused->reason;
    message["placer_seconds"] = compared.refused->placer_seconds;
  }
  return message.dump();
}

ComparedMethod DecodeComparedMethod(const std::string& bytes, const PlacementProblem& problem) {
  ComparedMethod compared;
  try {
    const nlohmann::json message = nlohmann::json::parse(bytes);
    if (message.contains("refused")) {
      compared.refused = RefusedMethod{message.at("method").get<std::string>(), message.at("refused").get<std::string>(),
                                       message.at("placer_seconds").get<double>()};
      return compared;
    }
    MethodResult row;
    row.method = message.at("method").get<std::string>();
    row.placement = message.at("placement").get<Placement>();
    row.placer_seconds = message.at("placer_seconds").get<double>();
    row.note = message.at("note").get<std::string>();
    if (static_cast<int32_t>(row.placement.size()) != problem.graph.num_ops()) {
      throw Error("a placement of " + std::to_string(row.placement.size()) + " ops; the graph has " +
                  std::to_string(problem.graph.num_ops()));
    }
    for (int32_t device : row.placement) {
      if (device < 0 || device >= problem.cluster.num_devices()) throw Error("a device out of the cluster's range");
    }
    // The simulator is deterministic: rank 0's run of the placement is the
    // worker's, and the table needs the whole result, not only the time.
    row.sim = problem.simulator.Run(row.placement);
    compared.row = std::move(row);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("distributed run: a worker's compare result is malformed: ") + e.what());
  } catch (const Error& e) {
    throw Error(std::string("distributed run: a worker's compare result is malformed: ") + e.what());
  }
  return compared;
}

std::optional<Comparison> CompareAcrossRanksOfWorld(const PlacementProblem& problem,
                                                    const std::vector<const PlacerInfo*>& placers,
                                                    const CompareRankFacts& facts, bool progress) {
  const PlaceWorldInputs inputs{problem.graph, problem.cluster, problem.cost, facts.methods, "simulated",
                                facts.op_times_path, problem.seed, facts.budget, nullptr, "", ""};
  std::unique_ptr<CompareWorld> world = JoinCompareWorld(inputs);
  if (!world) return CompareMethods(problem, placers, progress);
  if (world->rank() != 0) {
    CheckClusterCanRun(problem.graph, problem.cluster);
    for (size_t i = 0; i < placers.size(); ++i) {
      if (world->RankOf(i) == world->rank()) world->Send(i, EncodeComparedMethod(CompareOne(problem, *placers[i], false)));
    }
    return std::nullopt;
  }
  Comparison comparison = EmptyComparison(problem);
  std::vector<std::optional<ComparedMethod>> results(placers.size());
  for (size_t i = 0; i < placers.size(); ++i) {
    if (world->RankOf(i) == 0) results[i] = CompareOne(problem, *placers[i], progress);
  }
  for (size_t i = 0; i < placers.size(); ++i) {
    if (results[i]) continue;
    if (std::optional<std::string> bytes = world->Receive(i, placers[i]->name)) {
      results[i] = DecodeComparedMethod(*bytes, problem);
    } else {
      results[i] = CompareOne(problem, *placers[i], progress);
    }
  }
  for (std::optional<ComparedMethod>& result : results) AddCompared(comparison, std::move(*result));
  return comparison;
}

}  // namespace devplace
