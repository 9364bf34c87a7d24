#include "models/synthetic.h"

#include <algorithm>
#include <string>
#include <vector>

#include "models/checked.h"
#include "util/error.h"
#include "util/random.h"

namespace devplace {

namespace {

void RequireIn(int64_t value, int64_t max, const char* what) {
  Require(value >= 1 && value <= max, "synthetic graph: " + std::string(what) + " " + std::to_string(value) +
                                          " is outside 1.." + std::to_string(max));
}

}  // namespace

Graph MakeSyntheticGraph(const SyntheticOptions& options) {
  RequireIn(options.num_ops, kMaxSyntheticOps, "ops");
  RequireIn(options.width, kMaxSyntheticWidth, "width");
  RequireIn(options.batch, kMaxSyntheticBatch, "batch");
  RequireIn(options.hidden, kMaxSyntheticHidden, "hidden");
  Random random(options.seed);
  // Within the bounds above every count fits an int32 and every size an
  // int64 with room to spare.
  const int32_t width = models::ToInt32(options.width, "synthetic width");
  // Four ops per branch per layer, plus the input and the loss.
  const int32_t layers =
      models::ToInt32(std::max<int64_t>(1, (options.num_ops - 2) / (4 * options.width)), "synthetic layers");
  const int64_t batch = options.batch;

  Graph g;
  g.name = "synthetic" + std::to_string(options.num_ops);
  int64_t next_id = 0;
  auto add = [&](std::string name, std::string type, Phase phase, double flops, std::vector<int64_t> shape) {
    Op op;
    op.id = next_id++;
    op.name = std::move(name);
    op.type = std::move(type);
    op.phase = phase;
    op.flops = flops;
    op.outputs.push_back(TensorSpec::Make(std::move(shape)));
    return g.AddOp(std::move(op));
  };

  std::vector<std::vector<int64_t>> hidden(layers + 1, std::vector<int64_t>(width));
  for (auto& row : hidden) {
    // hidden / 8 x 1..8, exactly 256 x 1..8 at the default 2048.
    for (int64_t& h : row) h = std::max<int64_t>(1, options.hidden * (1 + static_cast<int64_t>(random.Below(8))) / 8);
  }

  int32_t input = add("input/batch", "IteratorGetNext", Phase::kForward, 0, {batch, hidden[0][0]});
  Op& input_op = g.mutable_op(input);
  input_op.device_kinds = MaskOf(DeviceKind::kCpu);

  // forward[l][b] and the branch feeding it from the layer below.
  std::vector<std::vector<int32_t>> forward(layers, std::vector<int32_t>(width));
  std::vector<std::vector<std::vector<int32_t>>> feeds(layers, std::vector<std::vector<int32_t>>(width));
  std::vector<std::vector<int32_t>> variables(layers, std::vector<int32_t>(width));
  for (int32_t l = 0; l < layers; ++l) {
    for (int32_t b = 0; b < width; ++b) {
      const int64_t in = l == 0 ? hidden[0][0] : hidden[l][b];
      const int64_t out = hidden[l + 1][b];
      const std::string prefix = "layer" + std::to_string(l) + "/branch" + std::to_string(b) + "/";
      const std::string group = prefix + "weights";
      int32_t var = add(prefix + "weights", "VariableV2", Phase::kForward, 0, {in, out});
      Op& var_op = g.mutable_op(var);
      var_op.persistent_bytes = 3 * in * out * 4;  // weights and two Adam slots
      var_op.outputs[0].aliases_persistent = true;
      var_op.colocation_group = group;
      variables[l][b] = var;
      int32_t mm = add(prefix + "MatMul", "MatMul", Phase::kForward, 2.0 * batch * in * out, {batch, out});
      g.mutable_op(mm).colocation_group = group;
      g.AddDataEdge(var, 0, mm);
      if (l == 0) {
        g.AddDataEdge(input, 0, mm);
        feeds[l][b].push_back(input);
      } else {
        g.AddDataEdge(forward[l - 1][b], 0, mm);
        feeds[l][b].push_back(forward[l - 1][b]);
        // Cross-links make the graph more than independent chains.
        if (width > 1 && random.Below(4) == 0) {
          int32_t other = forward[l - 1][(b + 1) % width];
          g.AddDataEdge(other, 0, mm);
          feeds[l][b].push_back(other);
        }
      }
      forward[l][b] = mm;
    }
  }
  int32_t loss = add("loss", "SoftmaxCrossEntropy", Phase::kForward, 4.0 * batch * hidden[layers][0], {});
  for (int32_t b = 0; b < width; ++b) g.AddDataEdge(forward[layers - 1][b], 0, loss);

  // Backward mirrors forward: the gradient of a matmul needs the gradients of
  // its consumers and its own inputs, and costs two matmuls.
  std::vector<std::vector<int32_t>> gradient(layers, std::vector<int32_t>(width));
  for (int32_t l = layers - 1; l >= 0; --l) {
    for (int32_t b = 0; b < width; ++b) {
      const int32_t mm = forward[l][b];
      const std::string prefix = "layer" + std::to_string(l) + "/branch" + std::to_string(b) + "/";
      const std::vector<int64_t>& in_shape = g.op(variables[l][b]).outputs[0].shape;
      int32_t grad = add(prefix + "MatMul_grad", "MatMul", Phase::kBackward, 2.0 * g.op(mm).flops,
                         {batch, in_shape[0]});
      g.mutable_op(grad).colocation_group = g.op(mm).colocation_group;
      for (int32_t src : feeds[l][b]) g.AddDataEdge(src, 0, grad);
      if (l == layers - 1) {
        g.AddDataEdge(loss, 0, grad);
      } else {
        for (int32_t c = 0; c < width; ++c) {
          const auto& f = feeds[l + 1][c];
          if (std::find(f.begin(), f.end(), mm) != f.end()) g.AddDataEdge(gradient[l + 1][c], 0, grad);
        }
      }
      gradient[l][b] = grad;
      int32_t update = add(prefix + "ApplyAdam", "ApplyAdam", Phase::kUpdate, 10.0 * in_shape[0] * in_shape[1], {});
      Op& update_op = g.mutable_op(update);
      update_op.colocation_group = g.op(mm).colocation_group;
      update_op.bytes_read = 4 * in_shape[0] * in_shape[1] * 4;
      update_op.bytes_written = 3 * in_shape[0] * in_shape[1] * 4;
      g.AddDataEdge(grad, 0, update);
      g.AddDataEdge(variables[l][b], 0, update);
    }
  }
  g.Finalize(g.name);
  return g;
}

}  // namespace devplace
