#include "learned/training/controller_rounds.h"

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace devplace {
namespace {

// A JSON header, a newline (a compact dump has none of its own), then raw
// bytes.
std::string WithBytes(const nlohmann::json& header, const std::string& bytes) { return header.dump() + "\n" + bytes; }

nlohmann::json HeaderOf(const std::string& bytes, std::string* rest, const char* what) {
  const size_t newline = bytes.find('\n');
  try {
    if (newline == std::string::npos) throw std::runtime_error("no header");
    if (rest) *rest = bytes.substr(newline + 1);
    return nlohmann::json::parse(bytes.substr(0, newline));
  } catch (const std::exception&) {
    throw Error(std::string("distributed run: a controller's ") + what + " is malformed");
  }
}

}  // namespace

std::string EncodeReport(const ControllerReport& report) {
  return WithBytes({{"stepped", report.stepped},
                    {"stop", report.stop},
                    {"samples", report.samples},
                    {"sum_time_s", report.sum_time_s},
                    {"ran", report.ran},
                    {"used", report.used},
                    {"best", report.best},
                    {"best_time_s", report.best_time_s},
                    {"baseline", report.baseline}},
                   report.generator_state);
}

ControllerReport DecodeReport(const std::string& bytes, int32_t num_ops, int32_t num_devices) {
  ControllerReport report;
  const nlohmann::json header = HeaderOf(bytes, &report.generator_state, "report");
  try {
    report.stepped = header.at("stepped").get<bool>();
    report.stop = header.at("stop").get<bool>();
    report.samples = header.at("samples").get<int64_t>();
    report.sum_time_s = header.at("sum_time_s").get<double>();
    report.ran = header.at("ran").get<int32_t>();
    report.used = header.at("used").get<int32_t>();
    report.best = header.at("best").get<Placement>();
    report.best_time_s = header.at("best_time_s").get<double>();
    report.baseline = header.at("baseline").get<double>();
  } catch (const nlohmann::json::exception&) {
    throw Error("distributed run: a controller's report is malformed");
  }
  bool fits = report.best.empty() || static_cast<int32_t>(report.best.size()) == num_ops;
  for (int32_t device : report.best) fits = fits && device >= 0 && device < num_devices;
  if (!fits || report.samples < 0) throw Error("distributed run: a controller's report names another graph or cluster");
  return report;
}

std::string EncodeStart(const ControllersStart& start) {
  return WithBytes({{"failing_reward", start.failing_reward},
                    {"baselines", start.baselines},
                    {"step", start.step},
                    {"resumed", start.resumed},
                    {"done", start.done}},
                   start.tensors);
}

ControllersStart DecodeStart(const std::string& bytes) {
  ControllersStart start;
  const nlohmann::json header = HeaderOf(bytes, &start.tensors, "start");
  try {
    start.failing_reward = header.at("failing_reward").get<double>();
    start.baselines = header.at("baselines").get<std::vector<double>>();
    start.step = header.at("step").get<int64_t>();
    start.resumed = header.at("resumed").get<bool>();
    start.done = header.at("done").get<bool>();
  } catch (const nlohmann::json::exception&) {
    throw Error("distributed run: rank 0's start for the controllers is malformed");
  }
  return start;
}

}  // namespace devplace
