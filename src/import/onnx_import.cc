#include "import/onnx_import.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <numeric>
#include <set>
#include <unordered_map>

#include "import/onnx_einsum.h"
#include "import/onnx_flops.h"
#include "import/onnx_fold.h"
#include "import/onnx_control_flow.h"
#include "import/onnx_training.h"
#include "import/onnx_validate.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "util/error.h"

namespace devplace {
namespace {

std::string Quoted(const std::string& path) { return "'" + ForMessage(path) + "'"; }

// Protobuf cannot parse a message past 2 GiB; ONNX keeps larger weights in
// external files. A bigger file is refused before it is read into memory.
constexpr std::uintmax_t kMaxModelFileBytes = std::uintmax_t{2} << 30;

// The first line of a library's message, made safe to print.
std::string FirstLine(const std::string& message) { return ForMessage(message.substr(0, message.find('\n'))); }

// Adds to `outer` (once each, in order) the names `body` reads from an
// enclosing scope: not its inputs or initializers, nor what its own nodes
// (or their nested bodies) produce. `defined` is what is in scope so far.
void CollectOuterNames(const onnx::GraphProto& body, std::set<std::string> defined, std::vector<std::string>& outer,
                       std::set<std::string>& seen) {
  for (const auto& v : body.input()) defined.insert(v.name());
  for (const auto& t : body.initializer()) defined.insert(t.name());
  auto read = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) outer.push_back(name);
  };
  for (const auto& node : body.node()) {
    for (const auto& name : node.input()) read(name);
    for (const auto& a : node.attribute()) {
      if (a.has_g()) CollectOuterNames(a.g(), defined, outer, seen);
      for (const auto& g : a.graphs()) CollectOuterNames(g, defined, outer, seen);
    }
    for (const auto& name : node.output()) defined.insert(name);
  }
  for (const auto& v : body.output()) read(v.name());
}

// What a node with subgraphs (Loop, If, Scan) reads implicitly: the outer
// values its bodies name. A weight read only in a Loop's body was no
// parameter at all, and a tensor read only there no edge into the Loop.
std::vector<std::string> ImplicitInputs(const onnx::NodeProto& node) {
  std::vector<std::string> outer;
  std::set<std::string> seen(node.input().begin(), node.input().end());
  for (const auto& a : node.attribute()) {
    if (a.has_g()) CollectOuterNames(a.g(), {}, outer, seen);
    for (const auto& g : a.graphs()) CollectOuterNames(g, {}, outer, seen);
  }
  return outer;
}

onnx::ModelProto ReadModel(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) throw Error(Quoted(path) + " does not exist or is not a file");
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) throw Error("cannot read the size of " + Quoted(path) + ": " + error.message());
  if (size > kMaxModelFileBytes) {
    throw Error(Quoted(path) + " is " + std::to_string(size) +
                " bytes, over the 2 GiB a protobuf ONNX model can be (large weights belong in external data)");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("cannot open " + Quoted(path));
  std::string bytes;
  bytes.reserve(static_cast<size_t>(size));
  bytes.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  if (file.bad()) throw Error("cannot read " + Quoted(path));
  if (bytes.size() > kMaxModelFileBytes) throw Error(Quoted(path) + " grew past 2 GiB while being read");
  if (bytes.empty()) throw Error(Quoted(path) + " is empty, not an ONNX model");
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    throw Error(Quoted(path) + " is not a readable ONNX model: it does not parse as an ONNX protobuf (truncated, or not ONNX)");
  }
  // Protobuf accepts many byte strings; a real model states its IR version
  // and has a graph with nodes.
  if (model.ir_version() <= 0 || !model.has_graph() || model.graph().node_size() == 0) {
    throw Error(Quoted(path) + " is not an ONNX model: it has no IR version or no graph nodes (truncated, or not ONNX)");
  }
  return model;
}

// libonnx's checker rejects what it does not know; a model from a newer
// exporter is still worth importing.
bool NewerThanChecker(const onnx::ModelProto& model) {
  if (model.ir_version() > onnx::IR_VERSION) return true;
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const auto& opset : model.opset_import()) {
    const std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
    auto it = ranges.find(domain);
    if (it != ranges.end() && opset.version() > it->second.second) return true;
  }
  return false;
}

bool HasUnregisteredOps(const onnx::ModelProto& model) {
  for (const auto& node : model.graph().node()) {
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    if (!onnx::OpSchemaRegistry::Schema(node.op_type(), domain)) return true;
  }
  return false;
}

// Inputs slots that hold weights, by op type: a graph input read only in
// such slots is a parameter of a model exported with export_params=False.
bool IsWeightSlot(const std::string& type, int slot) {
  if (type == "Conv" || type == "ConvTranspose" || type == "Gemm" || type == "LayerNormalization" ||
      type == "InstanceNormalization" || type == "GroupNormalization")
    return slot == 1 || slot == 2;
  if (type == "BatchNormalization") return slot >= 1 && slot <= 4;
  if (type == "LSTM" || type == "GRU" || type == "RNN") return slot >= 1 && slot <= 3;
  if (type == "PRelu") return slot == 1;
  return false;
}

// PyTorch names parameters after their modules ("layer1.0.conv1.weight").
bool LooksLikeParameterName(const std::string& name) {
  for (const char* suffix : {"weight", "bias", "running_mean", "running_var"}) {
    const std::string s = suffix;
    if (name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) return true;
  }
  return false;
}

struct Producer {
  int32_t op;
  int32_t output;
};

class UnionFind {
 public:
  int32_t Find(int32_t x) {
    if (static_cast<size_t>(x) >= parent_.size()) {
      const size_t old = parent_.size();
      parent_.resize(x + 1);
      std::iota(parent_.begin() + old, parent_.end(), static_cast<int32_t>(old));
    }
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(int32_t a, int32_t b) { parent_[Find(a)] = Find(b); }

 private:
  std::vector<int32_t> parent_;
};

bool WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Runs `work`, which transforms `model`, in a child process and takes back
// the model it left. libonnx's shape inference (1.12) indexes shapes and
// reads data it never checked for many op types (STFT, GatherND, pooling
// with inputs of the wrong rank, ...); the importer validates what it can
// beforehand, and this makes whatever is left an Error naming the file
// instead of a crash of devplace. Without fork it runs in-process.
void InferInChild(onnx::ModelProto& model, const std::function<void()>& work, const std::string& source) {
  int fds[2];
  if (::pipe(fds) != 0) {
    work();
    return;
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    work();
    return;
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string reply;
    try {
      work();
      reply = "O";
      if (!model.AppendToString(&reply)) reply = "E" + source + ": the model after shape inference is over 2 GiB";
    } catch (const Error& e) {
      reply = std::string("E") + e.what();
    } catch (const std::exception& e) {
      reply = "E" + source + ": ONNX shape inference failed: " + FirstLine(e.what());
    }
    ::_exit(WriteAll(fds[1], reply) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string reply;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    throw Error(source + ": libonnx's shape inference crashed on it (signal " + std::to_string(WTERMSIG(status)) +
                "): the model is malformed in a way its checker misses (an input of the wrong rank?)");
  }
  if (reply.empty() || (reply[0] != 'O' && reply[0] != 'E')) {
    throw Error(source + ": shape inference ended without a result (exit status " + std::to_string(status) + ")");
  }
  if (reply[0] == 'E') throw Error(reply.substr(1));
  onnx::ModelProto inferred;
  if (!inferred.ParseFromArray(reply.data() + 1, static_cast<int>(reply.size() - 1))) {
    throw Error(source + ": cannot read back the model after shape inference");
  }
  model = std::move(inferred);
}

class Importer {
 public:
  Importer(std::string path, const OnnxImportOptions& options) : path_(std::move(path)), options_(options) {}

  OnnxImportResult Run() {
    model_ = ReadModel(path_);
    ValidateOnnxModel(model_, Quoted(path_));
    CheckModel();
    ClassifyGraphInputs();
    ResolveDims();
    InferShapes();
    CollectTensorInfo();
    BuildForward();
    if (options_.training) {
      SynthesizeTraining(result_.graph, trainable_, graph_outputs_, options_.optimizer_slots);
    }
    result_.graph.Finalize(path_);
    result_.unknown_op_types.assign(unknown_types_.begin(), unknown_types_.end());
    return std::move(result_);
  }

 private:
  void CheckModel() {
    if (NewerThanChecker(model_)) {
      result_.checker_skipped = true;
      return;
    }
    // Ops libonnx has no schema for are reported as unknown, not rejected.
    if (HasUnregisteredOps(model_)) return;
    try {
      onnx::checker::check_model(model_);
    } catch (const std::exception& e) {
      throw Error(Quoted(path_) + " fails the ONNX checker: " + FirstLine(e.what()));
    }
  }

  void ClassifyGraphInputs() {
    const auto& graph = model_.graph();
    for (const auto& init : graph.initializer()) initializers_.insert(init.name());
    std::unordered_map<std::string, bool> only_weight_slots;
    for (const auto& node : graph.node()) {
      for (int slot = 0; slot < node.input_size(); ++slot) {
        auto [it, inserted] = only_weight_slots.emplace(node.input(slot), true);
        it->second = it->second && IsWeightSlot(node.op_type(), slot);
      }
    }
    for (const auto& input : graph.input()) {
      if (initializers_.count(input.name())) continue;
      auto it = only_weight_slots.find(input.name());
      const bool weight_slots = it != only_weight_slots.end() && it->second;
      if (weight_slots || LooksLikeParameterName(input.name())) weight_inputs_.insert(input.name());
    }
  }

  // Gives every dynamic dimension of the graph inputs its value from
  // --batch or --dim; names the ones left without.
  void ResolveDims() {
    auto* graph = model_.mutable_graph();
    std::map<std::string, int64_t> params = options_.dims;
    // libonnx's shape inference keeps dimensions in int32 in places: past
    // 2^31 it crashed, and the crash was blamed on the model. No tensor
    // dimension devplace can place comes near 2^30.
    constexpr int64_t kMaxDimension = int64_t{1} << 30;
    if (options_.batch && *options_.batch > kMaxDimension) {
      throw Error("--batch " + std::to_string(*options_.batch) + ": larger than 2^30, beyond any dimension a model can have here");
    }
    for (const auto& [name, value] : options_.dims) {
      if (value > kMaxDimension) {
        throw Error("--dim " + ForMessage(name) + "=" + std::to_string(value) +
                    ": larger than 2^30, beyond any dimension a model can have here");
      }
    }
    std::set<std::string> used;  // --dim names the inputs use
    std::set<std::string> declared;  // every dynamic dimension's name
    std::vector<std::string> missing;
    for (auto& input : *graph->mutable_input()) {
      if (initializers_.count(input.name()) || !input.type().has_tensor_type()) continue;
      const bool weight = weight_inputs_.count(input.name()) > 0;
      auto* tensor = input.mutable_type()->mutable_tensor_type();
      if (!tensor->has_shape()) {
        missing.push_back("the rank of input '" + ForMessage(input.name()) + "'");
        continue;
      }
      for (int i = 0; i < tensor->shape().dim_size(); ++i) {
        auto* dim = tensor->mutable_shape()->mutable_dim(i);
        if (dim->has_dim_param()) {
          declared.insert(dim->dim_param());
          if (options_.dims.count(dim->dim_param())) used.insert(dim->dim_param());
        }
        if (!weight && i == 0 && options_.batch) {
          if (dim->has_dim_param()) {
            // --dim batch=4 with --batch 2 gave the first dims 2 and the
            // rest of that name 4, without a word.
            auto given = options_.dims.find(dim->dim_param());
            if (given != options_.dims.end() && given->second != *options_.batch) {
              throw Error("--batch " + std::to_string(*options_.batch) + " and --dim " + ForMessage(given->first) + "=" +
                          std::to_string(given->second) + " disagree: --batch sets '" + ForMessage(given->first) +
                          "', the first dimension of input '" + ForMessage(input.name()) + "'; give one of them");
            }
            params.emplace(dim->dim_param(), *options_.batch);
          }
          dim->set_dim_value(*options_.batch);
        } else if (dim->has_dim_value()) {
          continue;
        } else if (dim->has_dim_param() && params.count(dim->dim_param())) {
          dim->set_dim_value(params.at(dim->dim_param()));
        } else if (dim->has_dim_param()) {
          const std::string name = ForMessage(dim->dim_param());
          if (std::find(missing.begin(), missing.end(), name) == missing.end()) missing.push_back(name);
        } else {
          missing.push_back("dimension " + std::to_string(i) + " of input '" + ForMessage(input.name()) + "'");
        }
      }
    }
    for (const auto& [name, value] : options_.dims) {
      if (used.count(name)) continue;
      std::string names;
      for (const std::string& d : declared) names += (names.empty() ? "" : ", ") + ForMessage(d);
      throw Error("--dim " + ForMessage(name) + ": " + Quoted(path_) + " has no dynamic dimension of that name (" +
                  (names.empty() ? std::string("it has none") : "it has: " + names) + ")");
    }
    if (!missing.empty()) {
      std::string names;
      for (size_t i = 0; i < missing.size() && i < 20; ++i) names += (i ? ", " : "") + missing[i];
      if (missing.size() > 20) names += ", ... (" + std::to_string(missing.size()) + " in all)";
      throw Error(Quoted(path_) + " has dynamic dimensions with no value: " + names + "; " +
                  (options_.takes_dim_flags ? "give them with --dim NAME=VALUE (or --batch N for the first dimension)"
                                            : "import it first: devplace import " + ForMessage(path_) +
                                                  " -o graph.json --training --dim NAME=VALUE (or --batch N)"));
    }
    // Declared shapes of outputs and intermediates may still carry the
    // symbolic or exported sizes; shape inference recomputes them.
    graph->clear_value_info();
    for (auto& output : *graph->mutable_output()) {
      if (output.type().has_tensor_type()) output.mutable_type()->mutable_tensor_type()->clear_shape();
    }
  }

  void InferShapes() {
    InferInChild(model_, [this] { InferAndFold(); }, Quoted(path_));
    for (const auto& init : model_.graph().initializer()) initializers_.insert(init.name());
  }

  void InferAndFold() {
    onnx::ShapeInferenceOptions inference(/*check_type=*/false, /*error_mode=*/0, /*data_propagation=*/true);
    // Each round folds the shape arithmetic whose inputs the last
    // inference resolved, which lets the next resolve more.
    for (int round = 0; round < 100; ++round) {
      try {
        onnx::shape_inference::InferShapes(model_, onnx::OpSchemaRegistry::Instance(), inference);
      } catch (const std::exception& e) {
        throw Error(Quoted(path_) + ": ONNX shape inference failed: " + FirstLine(e.what()));
      }
      CheckInferredShapes();
      const int folded = FoldShapeComputations(*model_.mutable_graph());
      const int completed = CompleteEinsumShapes(*model_.mutable_graph()) + CompleteLoopStateShapes(*model_.mutable_graph());
      if (folded + completed == 0) break;
    }
  }

  // Shape inference computes what the attributes say, so a kernel larger
  // than its padded input gives a negative size: the model is wrong, and
  // folding or costing it would be a silent wrong answer.
  void CheckInferredShapes() const {
    auto check = [this](const onnx::ValueInfoProto& v) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
      const auto& shape = v.type().tensor_type().shape();
      for (int i = 0; i < shape.dim_size(); ++i) {
        if (shape.dim(i).has_dim_value() && shape.dim(i).dim_value() < 0) {
          throw Error(Quoted(path_) + ": shape inference gives tensor '" + ForMessage(v.name()) + "' dimension " +
                      std::to_string(i) + " = " + std::to_string(shape.dim(i).dim_value()) +
                      " (the attributes of the node that makes it do not fit its input)");
        }
      }
    };
    for (const auto& v : model_.graph().value_info()) check(v);
    for (const auto& v : model_.graph().output()) check(v);
  }

  void CollectTensorInfo() { CollectOnnxTensorInfos(model_.graph(), infos_); }

  TensorSpec SpecOf(const std::string& name) {
    auto it = infos_.find(name);
    if (it == infos_.end() || !it->second.fully_known()) {
      result_.unknown_shape_tensors.push_back(name);
      TensorSpec unknown;
      unknown.shape = {};
      unknown.bytes = 0;
      if (it != infos_.end() && !it->second.dtype.empty()) unknown.dtype = it->second.dtype;
      return unknown;
    }
    const std::string dtype = it->second.dtype.empty() ? "float32" : it->second.dtype;
    if (CheckedTensorBytes(it->second.dims, std::max<int64_t>(it->second.element_bytes, 4)) < 0) {
      throw Error(Quoted(path_) + ": tensor '" + ForMessage(name) + "' is larger than 1 PiB (" +
                  std::to_string(it->second.dims.size()) + " dims); the model or its --dim/--batch values are wrong");
    }
    try {
      return TensorSpec::Make(it->second.dims, dtype);
    } catch (const Error& e) {
      // An empty tensor whose other dims overflow int64 ([0, 2^40, 2^40])
      // passes the byte check above; the error still names the model.
      throw Error(Quoted(path_) + ": tensor '" + ForMessage(name) + "': " + e.what());
    }
  }

  // Op names come from the model, which may hold any bytes: they are made
  // valid UTF-8 (a graph file is JSON) and unique.
  std::string UniqueName(const std::string& raw) {
    const std::string name = SafeOnnxName(raw);
    if (names_.insert(name).second) return name;
    for (int i = 1;; ++i) {
      std::string candidate = name + "_" + std::to_string(i);
      if (names_.insert(candidate).second) return candidate;
    }
  }

  int32_t AddOp(Op op, bool trainable) {
    op.id = result_.graph.num_ops();
    op.name = UniqueName(op.name);
    trainable_.push_back(trainable);
    return result_.graph.AddOp(std::move(op));
  }

  // Which weights are statistics rather than trained parameters.
  std::set<std::string> NormalizationStatistics() const {
    std::set<std::string> stats;
    for (const auto& node : model_.graph().node()) {
      if (node.op_type() != "BatchNormalization") continue;
      for (int slot : {3, 4}) {
        if (node.input_size() > slot) stats.insert(node.input(slot));
      }
    }
    return stats;
  }

  void AddWeight(const std::string& name, const std::set<std::string>& statistics, const std::set<std::string>& used) {
    if (!used.count(name) || producers_.count(name)) return;
    TensorSpec spec = SpecOf(name);
    const bool is_float = spec.dtype.rfind("float", 0) == 0 || spec.dtype == "bfloat16";
    const bool trainable = is_float && !statistics.count(name);
    spec.aliases_persistent = true;
    Op op;
    op.name = name;
    op.type = trainable ? "VariableV2" : "Const";
    op.persistent_bytes = spec.bytes * (trainable && options_.training ? 1 + options_.optimizer_slots : 1);
    op.outputs.push_back(spec);
    // Each tensor is bounded (SpecOf); their sums are checked, as external
    // data lets a small file declare any number of huge weights.
    bool overflow = false;
    if (trainable) {
      int64_t elements = 1;
      for (int64_t d : spec.shape) overflow |= __builtin_mul_overflow(elements, d, &elements);
      overflow |= __builtin_add_overflow(result_.parameter_count, elements, &result_.parameter_count);
      overflow |= __builtin_add_overflow(result_.parameter_bytes, spec.bytes, &result_.parameter_bytes);
    } else {
      overflow |= __builtin_add_overflow(result_.buffer_bytes, spec.bytes, &result_.buffer_bytes);
    }
    if (overflow || op.persistent_bytes < 0) {
      throw Error(Quoted(path_) + ": the weights total more bytes than devplace handles (at '" + ForMessage(name) + "')");
    }
    const int32_t index = AddOp(std::move(op), trainable);
    producers_[name] = {index, 0};
    weight_ops_.insert(index);
  }

  void BuildForward() {
    const auto& graph = model_.graph();
    Graph& g = result_.graph;
    g.name = SafeOnnxName(graph.name().empty() ? std::filesystem::path(path_).stem().string() : graph.name());
    std::set<std::string> used;
    for (const auto& node : graph.node()) {
      used.insert(node.input().begin(), node.input().end());
      for (const std::string& name : ImplicitInputs(node)) used.insert(name);
    }
    for (const auto& v : graph.output()) used.insert(v.name());

    // Data inputs come from the host, as a training step's input pipeline.
    for (const auto& input : graph.input()) {
      if (initializers_.count(input.name()) || weight_inputs_.count(input.name()) || !used.count(input.name())) continue;
      Op op;
      op.name = input.name();
      op.type = "Input";
      op.device_kinds = MaskOf(DeviceKind::kCpu);
      op.expert_stage = kExpertHost;
      op.outputs.push_back(SpecOf(input.name()));
      producers_[input.name()] = {AddOp(std::move(op), false), 0};
    }
    const std::set<std::string> statistics = NormalizationStatistics();
    for (const auto& init : graph.initializer()) AddWeight(init.name(), statistics, used);
    for (const auto& input : graph.input()) {
      if (weight_inputs_.count(input.name())) AddWeight(input.name(), statistics, used);
    }

    const OnnxInfoLookup find_info = [this](const std::string& name) -> const OnnxTensorInfo* {
      auto it = infos_.find(name);
      return it == infos_.end() ? nullptr : &it->second;
    };
    // Folding has made constant integers (a Loop's trip count) initializers.
    std::unordered_map<std::string, const onnx::TensorProto*> initializer_protos;
    for (const auto& t : graph.initializer()) initializer_protos[t.name()] = &t;
    const OnnxScalarLookup find_scalar = [&initializer_protos](const std::string& name) -> std::optional<int64_t> {
      auto it = initializer_protos.find(name);
      if (it == initializer_protos.end()) return std::nullopt;
      const std::optional<std::vector<int64_t>> values = OnnxIntValues(*it->second);
      if (!values || values->size() != 1) return std::nullopt;
      return values->front();
    };

    UnionFind groups;
    for (int n = 0; n < graph.node_size(); ++n) {
      const auto& node = graph.node(n);
      Op op;
      op.name = node.name().empty() ? node.op_type() + "_" + std::to_string(n) : node.name();
      op.type = SafeOnnxName(node.op_type());
      std::vector<const OnnxTensorInfo*> in_infos, out_infos;
      std::vector<Producer> sources;
      for (const auto& name : node.input()) {
        if (name.empty()) {
          in_infos.push_back(nullptr);
          continue;
        }
        auto it = producers_.find(name);
        if (it == producers_.end()) {
          throw Error(Quoted(path_) + ": node '" + ForMessage(op.name) + "' reads tensor '" + ForMessage(name) +
                      "', which no input, initializer or earlier node produces");
        }
        sources.push_back(it->second);
        auto info = infos_.find(name);
        in_infos.push_back(info == infos_.end() ? nullptr : &info->second);
        op.bytes_read += g.op(it->second.op).outputs[it->second.output].bytes;
      }
      // Read by a body: edges (and a weight's co-location), not operands.
      for (const std::string& name : ImplicitInputs(node)) {
        auto it = producers_.find(name);
        if (it == producers_.end()) {
          throw Error(Quoted(path_) + ": node '" + ForMessage(op.name) + "' reads tensor '" + ForMessage(name) +
                      "' in its body, which no input, initializer or earlier node produces");
        }
        sources.push_back(it->second);
        op.bytes_read += g.op(it->second.op).outputs[it->second.output].bytes;
      }
      for (const auto& name : node.output()) {
        op.outputs.push_back(name.empty() ? TensorSpec{} : SpecOf(name));
        op.bytes_written += op.outputs.back().bytes;
        auto info = infos_.find(name);
        out_infos.push_back(info == infos_.end() ? nullptr : &info->second);
      }
      if (const std::string mismatch = OnnxOperandMismatch(node, in_infos, out_infos); !mismatch.empty()) {
        throw Error(Quoted(path_) + ": node '" + ForMessage(op.name) + "' (" + ForMessage(op.type) + "): " + mismatch +
                    "; the model or its --dim/--batch values are wrong");
      }
      OnnxNodeCost cost = EstimateOnnxNodeFlops(node, in_infos, out_infos);
      const OnnxSubgraphCost control = EstimateOnnxSubgraphFlops(node, op.name, in_infos, find_info, find_scalar);
      if (control.has_subgraph) {
        // Control flow: the work of its bodies, not a guess from its tensors.
        cost = {control.flops, /*known_type=*/true};
        for (const std::string& name : control.uncounted_loops) result_.uncounted_loops.push_back(name);
        for (const std::string& type : control.unknown_types) unknown_types_.insert(SafeOnnxName(type));
      }
      op.flops = cost.flops;
      if (!cost.known_type) unknown_types_.insert(SafeOnnxName(node.op_type()));
      if (cost.known_type && cost.flops == 0 && OnnxIsMatrixProduct(node.op_type())) result_.uncosted_products.push_back(op.name);
      result_.forward_flops += cost.flops;

      const int32_t index = AddOp(std::move(op), false);
      std::set<std::pair<int32_t, int32_t>> seen;
      for (const Producer& p : sources) {
        if (!seen.insert({p.op, p.output}).second) continue;
        g.AddDataEdge(p.op, p.output, index);
        if (weight_ops_.count(p.op)) groups.Union(p.op, index);
      }
      for (int k = 0; k < node.output_size(); ++k) {
        if (!node.output(k).empty()) producers_[node.output(k)] = {index, k};
      }
    }
    for (const auto& v : graph.output()) {
      auto it = producers_.find(v.name());
      if (it != producers_.end()) graph_outputs_.push_back({it->second.op, it->second.output});
    }

    // A weight and every op that reads it share a device; the group takes
    // the name of its first reader so a placement reads as the model.
    std::map<int32_t, std::string> group_names;
    std::map<int32_t, int32_t> group_sizes;
    for (int32_t i = 0; i < g.num_ops(); ++i) ++group_sizes[groups.Find(i)];
    for (int32_t i = 0; i < g.num_ops(); ++i) {
      const int32_t root = groups.Find(i);
      if (group_sizes[root] < 2) continue;
      if (!weight_ops_.count(i) && !group_names.count(root)) group_names[root] = g.op(i).name;
    }
    for (int32_t i = 0; i < g.num_ops(); ++i) {
      auto it = group_names.find(groups.Find(i));
      if (it != group_names.end()) g.mutable_op(i).colocation_group = it->second;
    }
  }

  std::string path_;
  OnnxImportOptions options_;
  onnx::ModelProto model_;
  OnnxImportResult result_;
  std::set<std::string> initializers_, weight_inputs_, names_, unknown_types_;
  std::unordered_map<std::string, OnnxTensorInfo> infos_;
  std::unordered_map<std::string, Producer> producers_;
  std::set<int32_t> weight_ops_;
  std::vector<bool> trainable_;
  std::vector<std::pair<int32_t, int32_t>> graph_outputs_;
};

}  // namespace

OnnxImportResult ImportOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  // The boundary: whatever libonnx or protobuf throws on a hostile model
  // becomes one line naming the file.
  try {
    return Importer(path, options).Run();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error(Quoted(path) + ": out of memory importing the model (is it, or a --dim value, far too large?)");
  } catch (const std::exception& e) {
    throw Error(Quoted(path) + ": cannot import the ONNX model: " + FirstLine(e.what()));
  }
}

std::string OnnxImportWarning(const std::string& path, const OnnxImportResult& result) {
  std::vector<std::string> parts;
  auto list = [](const std::vector<std::string>& items, size_t most) {
    std::string text;
    for (size_t i = 0; i < items.size() && i < most; ++i) text += (i ? ", " : "") + items[i];
    if (items.size() > most) text += ", ... (" + std::to_string(items.size()) + " in all)";
    return text;
  };
  auto list_safe = [&list](const std::vector<std::string>& items, size_t most) {
    std::vector<std::string> safe;
    for (size_t i = 0; i < items.size() && i < most; ++i) safe.push_back(ForMessage(items[i], 80));
    std::string text = list(safe, most);
    if (items.size() > most) text += ", ... (" + std::to_string(items.size()) + " in all)";
    return text;
  };
  if (!result.uncosted_products.empty()) {
    // First: the one that makes the step time wrong, not just a byte count.
    parts.push_back("matrix products of unknown shape costed at 0 FLOPs: " + list_safe(result.uncosted_products, 5));
  }
  if (!result.unknown_op_types.empty()) {
    parts.push_back("unknown op types costed from their tensor sizes: " + list_safe(result.unknown_op_types, 20));
  }
  if (!result.uncounted_loops.empty()) {
    parts.push_back("loops whose trip count is not a constant costed for one iteration: " +
                    list_safe(result.uncounted_loops, 5));
  }
  if (!result.unknown_shape_tensors.empty()) {
    parts.push_back("tensors of unknown shape counted as 0 bytes: " + list_safe(result.unknown_shape_tensors, 5));
  }
  if (result.checker_skipped) parts.push_back("the model is newer than libonnx's checker knows; checker skipped");
  if (parts.empty()) return "";
  std::string line = "warning: " + ForMessage(path) + ": ";
  for (size_t i = 0; i < parts.size(); ++i) line += (i ? "; " : "") + parts[i];
  return line;
}

bool IsOnnxPath(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".onnx" || ext == ".ONNX";
}

}  // namespace devplace
