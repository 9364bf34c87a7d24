// `devplace pretrain --method mars`: Mars's graph encoder trained by Deep
// Graph Infomax on graphs alone (learned/training/mars_pretrainer.h), written as an
// encoder file that `place --method mars --encoder` and `train --method
// mars --encoder` start from.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/inputs.h"
#include "cli/learned_commands.h"
#include "learned/training/mars_pretrainer.h"
#include "learned/training/one_line_errors.h"
#include "util/error.h"
#include "util/stop_request.h"

namespace devplace {
namespace {

struct PretrainFlags {
  std::string method = "mars";
  std::vector<std::string> graphs;
  MarsPretrainOptions options;
  bool quiet = false;
  bool overwrite = false;
};

void RunPretrain(PretrainFlags flags) {
  if (flags.method != "mars") {
    throw Error("pretrain: --method must be mars (the one method with a pre-trained encoder), got '" + ForMessage(flags.method) + "'");
  }
  MarsPretrainOptions& options = flags.options;
  if (std::filesystem::is_directory(options.encoder_out)) {
    throw Error(ForMessage(options.encoder_out) + ": is a folder, not an encoder file (-o)");
  }
  RefuseToReplaceTrainedFile(options.encoder_out, options.resume, flags.overwrite, "encoder");
  if (options.max_steps <= 0 && options.max_seconds <= 0) options.max_seconds = 600;
  std::vector<std::unique_ptr<Graph>> graphs;
  std::vector<const Graph*> pointers;
  for (const std::string& name : flags.graphs) {
    graphs.push_back(std::make_unique<Graph>(ResolveGraph(name)));
    pointers.push_back(graphs.back().get());
  }
  StopOnSignals();  // a Ctrl-C ends the training early; the encoder is still written
  // A line per step at most once a second, and the last.
  auto last_print = std::chrono::steady_clock::now() - std::chrono::seconds(2);
  const MarsPretrainResult result = PretrainMarsEncoder(pointers, options, [&](const MarsPretrainProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (flags.quiet || now - last_print < std::chrono::seconds(1)) return;
    last_print = now;
    std::fprintf(stderr, "step %6lld  loss %.5f  best %.5f  accuracy %.3f  (%.0f s)\n", static_cast<long long>(p.step), p.loss,
                 p.best_loss, p.accuracy, p.seconds);
  });
  std::printf("pre-trained %lld steps in %.1f s on %zu graphs%s; best DGI loss %.5f (accuracy %.3f at the last step); encoder in %s\n",
              static_cast<long long>(result.last.step), result.last.seconds, graphs.size(),
              result.stopped_early ? " (stopped early: the loss stopped improving)" : "", result.last.best_loss,
              result.last.accuracy, options.encoder_out.c_str());
}

}  // namespace

void AddPretrainCommand(CLI::App& app) {
  auto flags = std::make_shared<PretrainFlags>();
  MarsPretrainOptions& o = flags->options;
  CLI::App* cmd = app.add_subcommand("pretrain", LearnedCommandDescription("pretrain"));
  cmd->add_option("--method", flags->method, "mars (the one method with a pre-trained encoder)");
  cmd->add_option("--graphs", flags->graphs, "Graph files or built-in model names, comma-separated")->required()->delimiter(',');
  cmd->add_option("-o,--out", o.encoder_out, "The encoder file to write (also written at each checkpoint)")->required();
  cmd->add_option("--seed", o.seed, "Seed of every random choice");
  cmd->add_option("--max-steps", o.max_steps, "Stop after this many steps")->check(NotNegative());
  cmd->add_option("--max-seconds", o.max_seconds, "Stop after this many seconds (default 600 when no budget is given)")
      ->check(InRange(0.0, 1e9));
  cmd->add_option("--patience", o.patience, "Stop early when the loss has not improved for this many steps")->check(InRange(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--learning-rate", o.learning_rate, "Adam's learning rate")->check(InRange(1e-9, 1.0));
  cmd->add_option("--mars-hidden", o.hidden, "Width of the encoder's GCN layers")->check(InRange(1, 4096));
  cmd->add_option("--mars-layers", o.layers, "GCN layers")->check(InRange(1, 16));
  cmd->add_option("--checkpoint-seconds", o.checkpoint_seconds, "Seconds between saves of the encoder and checkpoint (0 = only at the end)")
      ->check(InRange(0.0, 1e9));
  cmd->add_flag("--resume", o.resume, "Continue from the checkpoint next to the encoder file (ENCODER.checkpoint)");
  cmd->add_flag("--overwrite", flags->overwrite, "Replace an existing encoder file (without it, one is refused unless --resume)");
  cmd->add_flag("--quiet", flags->quiet, "No progress lines");
  cmd->callback([flags] {
    RunWithOneLineErrors("pretrain", [&] { RunPretrain(*flags); });
  });
}

}  // namespace devplace
