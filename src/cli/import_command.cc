// devplace import: reads a user's ONNX model and writes its forward pass, or
// with --training its whole training step, as a devplace graph file.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "graph/graph_json.h"
#include "import/onnx_import.h"
#include "report/sim_report.h"
#include "util/error.h"
#include "util/format_bytes.h"

namespace devplace {
namespace {

struct ImportFlags {
  std::string model;
  std::string output;
  int64_t batch = 0;
  std::vector<std::string> dims;  // NAME=VALUE
  bool training = false;
};

std::map<std::string, int64_t> ParseDims(const std::vector<std::string>& specs) {
  std::map<std::string, int64_t> dims;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    Require(eq != std::string::npos && eq > 0 && eq + 1 < spec.size(),
            "--dim '" + spec + "' is not NAME=VALUE (for example --dim batch=32)");
    const std::string value = spec.substr(eq + 1);
    size_t used = 0;
    int64_t n = -1;
    try {
      n = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    Require(used == value.size() && n > 0, "--dim '" + spec + "': the value must be a positive integer");
    Require(dims.emplace(spec.substr(0, eq), n).second, "--dim '" + spec + "': " + spec.substr(0, eq) + " is given twice");
  }
  return dims;
}

void RunImport(const ImportFlags& flags, const CLI::Option* batch_option) {
  OnnxImportOptions options;
  if (batch_option->count() > 0) {
    Require(flags.batch > 0, "--batch must be a positive integer");
    options.batch = flags.batch;
  }
  options.dims = ParseDims(flags.dims);
  options.training = flags.training;
  OnnxImportResult result = ImportOnnxFile(flags.model, options);
  const std::string warning = OnnxImportWarning(flags.model, result);
  if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
  SaveGraphFile(result.graph, flags.output);
  std::printf("wrote %s: %s, %d ops, %.4g forward FLOPs (%.4g multiply-adds), %.4g FLOPs per step, %lld parameters "
              "(%s), %s persistent\n",
              flags.output.c_str(), result.graph.name.c_str(), result.graph.num_ops(), result.forward_flops,
              result.forward_flops / 2, result.graph.total_flops(), static_cast<long long>(result.parameter_count),
              FormatBytes(result.parameter_bytes).c_str(), FormatBytes(result.graph.total_persistent_bytes()).c_str());
}

}  // namespace

void AddImportCommand(CLI::App& app) {
  auto flags = std::make_shared<ImportFlags>();
  CLI::App* cmd = app.add_subcommand("import", "Read an ONNX model and write it as a graph file (docs/import.md)");
  cmd->add_option("model", flags->model, "ONNX model file")->required();
  cmd->add_option("-o,--output", flags->output, "Graph file to write (JSON)")->required();
  CLI::Option* batch = cmd->add_option("--batch", flags->batch, "Batch size: the first dimension of every data input");
  cmd->add_option("--dim", flags->dims, "Value of a named dynamic dimension, NAME=VALUE (repeatable)");
  cmd->add_flag("--training", flags->training,
                "Add the backward pass and an Adam update per parameter, co-located with their forward ops");
  cmd->callback([flags, batch] { RunImport(*flags, batch); });
}

}  // namespace devplace
