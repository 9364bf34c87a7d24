#include "report/search_curve.h"

#include <filesystem>

#include "learned/files/run_folder.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/files.h"

namespace devplace {

std::vector<CurvePoint> ParseSearchCurve(const std::string& text, const std::string& source) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t newline = text.find('\n', start);
    lines.push_back(text.substr(start, newline == std::string::npos ? std::string::npos : newline - start));
    if (newline == std::string::npos) break;
    start = newline + 1;
  }
  const bool last_unfinished = !text.empty() && text.back() != '\n';
  if (lines.empty() || lines[0].empty()) throw Error(source + ": empty, expected a CSV header line");

  const std::vector<std::string> header = SplitCsvLine(lines[0]);
  auto find = [&](const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return i;
    }
    return header.size();
  };
  auto column = [&](const std::string& name) {
    const size_t i = find(name);
    if (i == header.size()) throw Error(source + ": header has no '" + name + "' column");
    return i;
  };
  const size_t step = column("step"), seconds = column("seconds"), mean = column("mean_step_time_s"),
               best = column("best_step_time_s"), samples = find("samples");

  std::vector<CurvePoint> points;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty() || lines[i] == "\r") continue;
    const std::vector<std::string> cells = SplitCsvLine(lines[i]);
    double values[5] = {0, 0, 0, 0, -1};
    const size_t wanted[5] = {step, seconds, mean, best, samples};
    bool ok = cells.size() == header.size();
    for (int k = 0; k < 5 && ok; ++k) ok = wanted[k] == header.size() || ParseCsvNumber(cells[wanted[k]], values[k]);
    ok = ok && values[4] >= -1 && values[4] < 9.2e18;
    if (!ok) {
      if (i + 1 == lines.size() && last_unfinished) break;  // the run is writing this row now
      throw Error(source + ": line " + std::to_string(i + 1) + ": expected " + std::to_string(header.size()) +
                  " numbers as the header names");
    }
    points.push_back({static_cast<int64_t>(values[0]), values[1], values[2], values[3], static_cast<int64_t>(values[4])});
  }
  return points;
}

RunFolder LoadRunFolder(const std::string& folder, const Graph& graph, const Cluster& cluster) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(folder)) throw Error("run '" + folder + "': not a folder (give the --out folder of devplace place)");
  RunFolder run;
  run.path = folder;
  const std::string curve = (fs::path(folder) / run_folder::kCurve).string();
  run.placement_file = (fs::path(folder) / run_folder::kBestPlacement).string();
  const bool has_curve = fs::exists(curve), has_placement = fs::exists(run.placement_file);
  if (!has_curve && !has_placement) {
    throw Error("run '" + folder + "': holds neither curve.csv nor best_placement.json (give the --out folder of devplace place)");
  }
  if (has_curve) run.curve = ParseSearchCurve(ReadTextFile(curve), curve);
  if (has_placement) {
    // A clearer message than the first unknown op when the run was for
    // another graph or cluster.
    nlohmann::json document = ReadJsonFile(run.placement_file);
    for (const auto& [key, expected] : {std::pair<std::string, std::string>{"graph", graph.name}, {"cluster", cluster.name}}) {
      if (document.is_object() && document.contains(key) && document[key].is_string() && document[key] != expected) {
        throw Error(run.placement_file + ": the run placed " + key + " '" + document[key].get<std::string>() +
                    "', not '" + expected + "'");
      }
    }
    run.placement = LoadPlacementFile(run.placement_file, graph, cluster);
  }
  return run;
}

}  // namespace devplace
