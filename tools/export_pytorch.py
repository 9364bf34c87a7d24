#!/usr/bin/python3
"""Writes a PyTorch model's real training step as a devplace graph file.

Run with Debian's python3 (python3-torch; python3-torchvision for its models):

    /usr/bin/python3 tools/export_pytorch.py resnet50 --batch 32 -o resnet50.json
    /usr/bin/python3 tools/export_pytorch.py my_model.py --batch 8 -o my_model.json

It traces one step -- forward, loss, backward, optimizer step -- with
torch.fx's make_fx, so every aten op the step runs becomes a devplace op
with its shapes, bytes and FLOPs. Op names start with the module that ran
them ("layer1.0.conv1/convolution"), and the forward, backward and update
ops of a module share its co-location group, so a placement maps back to
modules. A file argument is a Python file defining

    def make_model(batch):   # -> (model, inputs tuple, target tensor)

and optionally loss(output, target) and optimizer(parameters) (default:
Adam). The default loss is cross entropy on the main output, plus 0.3 x
each auxiliary output's (GoogLeNet's and Inception's training outputs);
an output that is not (batch, classes) gets the mean square instead.
A problem with the model, its trace or the output file is one line on
stderr and exit status 1, with no file written. See docs/import.md.
"""
import argparse
import importlib.util
import json
import math
import os
import sys
import warnings

import torch
from torch.fx.experimental.proxy_tensor import make_fx

# Which module and phase each traced node belongs to, set while tracing.
_state = {"modules": [], "backward_module": "", "phase": "forward", "marker": False}


class _ModuleBoundary(torch.autograd.Function):
    """An identity on a module's output whose backward says that the
    module's own backward starts: the ops traced after it are its gradient."""

    @staticmethod
    def forward(ctx, name, x):
        ctx.name = name
        _state["marker"] = True
        y = x.clone()  # a view could not be modified in place downstream
        _state["marker"] = False
        return y

    @staticmethod
    def backward(ctx, grad):
        _state["backward_module"] = ctx.name
        return None, grad


def _tag_nodes():
    original = torch.fx.Graph.create_node

    def create_node(self, *args, **kwargs):
        node = original(self, *args, **kwargs)
        if _state["phase"] == "forward":
            node.meta["dp_module"] = _state["modules"][-1] if _state["modules"] else ""
        elif _state["phase"] == "backward":
            node.meta["dp_module"] = _state["backward_module"]
        else:
            node.meta["dp_module"] = ""
        node.meta["dp_phase"] = _state["phase"]
        node.meta["dp_marker"] = _state["marker"]
        return node

    torch.fx.Graph.create_node = create_node
    return lambda: setattr(torch.fx.Graph, "create_node", original)


def _hook_modules(model):
    def pre(module, inputs):
        _state["modules"].append(module._dp_name)
        if isinstance(module, torch.nn.RNNBase):
            # An RNN computes from its cached _flat_weights, which torch
            # 1.13's functional_call does not refresh: the traced step
            # read the module's own tensors as constants, one copy per
            # time step, and its weights got no gradient nor update.
            module._flat_weights = [getattr(module, w, None) for w in module._flat_weights_names]

    def post(module, inputs, output):
        _state["modules"].pop()
        if isinstance(output, torch.Tensor) and output.requires_grad:
            return _ModuleBoundary.apply(module._dp_name, output)
        if isinstance(output, tuple) and output and isinstance(output[0], torch.Tensor) and output[0].requires_grad:
            return (_ModuleBoundary.apply(module._dp_name, output[0]),) + output[1:]  # attention: (output, weights)
        return None

    handles = []
    for name, module in model.named_modules():
        if hasattr(module, "inplace"):
            module.inplace = False  # in-place ops on a boundary's output confuse autograd
        # Every module, not only leaves: some (attention) compute with their
        # children's weights without calling them. The innermost names an op.
        if name:
            module._dp_name = name
            handles += [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]
    return handles


_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float64: "float64",
           torch.int64: "int64", torch.int32: "int32", torch.int16: "int16", torch.int8: "int8",
           torch.uint8: "uint8", torch.bool: "bool"}

# Ops that only relabel memory: no FLOPs, and their output is a view.
_VIEWS = {"view", "_unsafe_view", "t", "transpose", "permute", "expand", "detach", "alias", "unsqueeze", "squeeze",
          "slice", "select", "as_strided", "reshape", "lift_fresh_copy", "_reshape_alias", "split", "unbind"}


def _numel(shape):
    return math.prod(shape) if shape else 1


def _short_name(target):
    name = getattr(target, "__name__", str(target))
    return name.split(".")[0]


# Pooling ops and where their kernel_size argument is.
_POOLS = {"max_pool2d_with_indices": 1, "avg_pool2d": 1, "max_pool2d_with_indices_backward": 2,
          "avg_pool2d_backward": 2}


def _window(kernel_size):
    sizes = list(kernel_size) if isinstance(kernel_size, (list, tuple)) else [kernel_size]
    if len(sizes) == 1:
        sizes = sizes * 2
    return math.prod(int(k) for k in sizes)


def _flops(name, node, out_shapes, in_shapes):
    """FLOPs of one aten op: 2 per multiply-add for products and
    convolutions, about one per element otherwise. in_shapes[k] is the
    shape of the op's k-th positional argument (None where it is not a
    tensor), so that a bias held as a constant does not shift the rest."""
    out = out_shapes[0] if out_shapes else ()

    def arg(k, default=()):
        return in_shapes[k] if k < len(in_shapes) and in_shapes[k] is not None else default

    if name in _VIEWS or name in ("zeros_like", "zeros", "empty", "ones_like", "full", "clone", "copy_", "_to_copy"):
        return 0.0
    if name in ("mm", "addmm", "bmm", "matmul", "baddbmm"):
        a = arg(1) if name in ("addmm", "baddbmm") else arg(0)
        return 2.0 * _numel(out) * (a[-1] if a else 1)
    if name == "convolution":
        return 2.0 * _numel(out) * _numel(arg(1)[1:])
    if name == "convolution_backward":
        # Gradients of the input and of the weight, each as dear as the forward.
        grad_out, weight = arg(0), arg(2)
        mask = node.args[-1] if isinstance(node.args[-1], (list, tuple)) else [True, True, True]
        return 2.0 * _numel(grad_out) * _numel(weight[1:]) * (int(bool(mask[0])) + int(bool(mask[1])))
    if name in _POOLS:
        # Outputs (the pooled side: dy for a backward) times the window, as
        # TensorFlow's pooling is costed: the executor reads the window back.
        pooled = arg(0) if name.endswith("_backward") else out
        return float(_numel(pooled) * _window(node.args[_POOLS[name]]))
    if name in ("_softmax", "_log_softmax"):
        return 5.0 * _numel(out)
    if "batch_norm" in name or "layer_norm" in name:
        return 8.0 * _numel(arg(0, out))
    if name.startswith("sum") or name.startswith("mean") or name in ("amax", "max", "min", "nll_loss_forward"):
        return float(_numel(arg(0, out)))
    return float(max([_numel(out)] + [0]))


def _shape_of(arg, graph_module):
    """The shape of an fx argument: a traced tensor, or a constant the
    graph holds (get_attr); None for anything else."""
    if not isinstance(arg, torch.fx.Node):
        return None
    meta = arg.meta.get("tensor_meta")
    if hasattr(meta, "shape"):
        return tuple(meta.shape)
    if arg.op == "get_attr":
        value = getattr(graph_module, arg.target, None)
        if isinstance(value, torch.Tensor):
            return tuple(value.shape)
    return None


def _tensor(meta):
    shape = [int(d) for d in meta.shape]
    dtype = _DTYPES.get(meta.dtype, "float32")
    return {"shape": shape, "dtype": dtype}


def _bytes(spec):
    size = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "int16": 2,
            "int8": 1, "uint8": 1, "bool": 1}[spec["dtype"]]
    return _numel(spec["shape"]) * size


# The weight of an auxiliary classifier's loss: GoogLeNet's paper uses 0.3
# (torchvision's reference training, 0.3 for GoogLeNet and 0.4 for
# Inception-V3); it changes no op of the step, only a constant.
_AUX_LOSS_WEIGHT = 0.3


def _output_tensors(out):
    """The tensors of a model's output, the main one first: a tensor; a
    tuple, list or namedtuple (GoogLeNet's and Inception's training outputs:
    logits, then the auxiliary classifiers'); or a dict ("out" first, as
    torchvision's segmentation models)."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        values = ([out["out"]] if "out" in out else []) + [v for k, v in out.items() if k != "out"]
    elif isinstance(out, (tuple, list)):
        values = list(out)
    else:
        raise ValueError(f"the model returns a {type(out).__name__}, not tensors; define loss(output, target)")
    tensors = [t for v in values for t in _output_tensors(v) if t is not None]
    if not tensors:
        raise ValueError("the model returns no tensor; define loss(output, target)")
    return tensors


def _one_loss(output, target):
    # Cross entropy where the output is (batch, classes) and the target
    # class indices; otherwise the mean square, a stand-in whose gradient
    # reaches every element, so the backward pass is the model's own.
    if (isinstance(target, torch.Tensor) and output.dim() == 2 and target.dim() == 1 and not target.is_floating_point()
            and output.shape[0] == target.shape[0]):
        return torch.nn.functional.cross_entropy(output, target)
    return output.float().pow(2).mean()


def default_loss(out, target):
    """Cross entropy on the main output, plus the auxiliary outputs' at
    _AUX_LOSS_WEIGHT each."""
    main, *aux = _output_tensors(out)
    loss = _one_loss(main, target)
    for t in aux:
        loss = loss + _AUX_LOSS_WEIGHT * _one_loss(t, target)
    return loss


def _parameter_slots(model):
    """Every name a parameter is reached by, to its index among
    model.parameters(). A tied weight (a decoder sharing its embedding's)
    has several names; functional_call swaps only the names it is given,
    so under one name alone the other module read the original tensor as
    a constant, and the weight's gradient from that use was lost."""
    index = {id(p): k for k, p in enumerate(model.parameters())}
    slots = {}
    for module_name, module in model.named_modules(remove_duplicate=False):
        for name, p in module._parameters.items():
            if p is not None and id(p) in index:
                slots[f"{module_name}.{name}" if module_name else name] = index[id(p)]
    return slots


def trace_training_step(model, inputs, target, loss_fn=None, make_optimizer=None):
    """Traces forward, loss, backward and the optimizer step; returns the
    fx GraphModule and the parameter names in placeholder order."""
    loss_fn = loss_fn or default_loss
    make_optimizer = make_optimizer or (lambda params: torch.optim.Adam(params, lr=1e-3))
    names = [name for name, _ in model.named_parameters()]
    params = [p.detach().clone().requires_grad_(p.requires_grad) for p in model.parameters()]
    slots = _parameter_slots(model)

    def step(target, *args):
        data, ps = args[: len(inputs)], args[len(inputs):]
        _state.update(phase="forward", modules=[], backward_module="")
        out = torch.nn.utils.stateless.functional_call(model, {name: ps[k] for name, k in slots.items()}, tuple(data))
        loss = loss_fn(out, target)
        _state["phase"] = "backward"
        loss.backward()
        _state["phase"] = "update"
        make_optimizer([p for p in ps if p.requires_grad]).step()
        return [loss] + list(ps)

    handles = _hook_modules(model)
    untag = _tag_nodes()
    try:
        graph_module = make_fx(step)(target, *inputs, *params)
    finally:
        untag()
        for h in handles:
            h.remove()
    return graph_module, names


def to_devplace_graph(graph_module, names, num_data_inputs, graph_name, buffer_names=None):
    """buffer_names: id of each of the model's buffers -> its state_dict
    name. A buffer the step reads becomes one Const op under that name, in
    its module's group, so that a device_map can give it a device where its
    module is split across devices (accelerate wants every state_dict key)."""
    buffer_names = buffer_names or {}
    buffer_ops = {}  # state_dict name -> op id
    nodes = list(graph_module.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    data = set(placeholders[: num_data_inputs + 1])  # the target, then the model's inputs
    param_module = {p: names[i].rsplit(".", 1)[0] if "." in names[i] else ""
                    for i, p in enumerate(placeholders[num_data_inputs + 1:])}
    param_name = {p: names[i] for i, p in enumerate(placeholders[num_data_inputs + 1:])}

    ops, where, used_names = [], {}, set()  # where: fx node -> (op id, output index)

    def unique(name):
        candidate, k = name, 1
        while candidate in used_names:
            candidate, k = f"{name}_{k}", k + 1
        used_names.add(candidate)
        return candidate

    # Multi-output ops: their getitem users give the outputs' metadata.
    outputs_of = {}
    for n in nodes:
        if n.op == "call_function" and _short_name(n.target) == "getitem":
            source, index = n.args
            outputs_of.setdefault(source, {})[index] = n

    for n in nodes:
        if n.op == "output":
            continue
        if n.op == "call_function" and _short_name(n.target) == "getitem":
            source, index = n.args
            if source in where:
                where[n] = (where[source][0], index)
            continue
        if n.meta.get("dp_marker") and n.all_input_nodes:
            where[n] = where.get(n.all_input_nodes[0])  # module boundaries are bookkeeping, not ops
            continue
        buffer = buffer_names.get(id(getattr(graph_module, n.target, None))) if n.op == "get_attr" else None
        if buffer in buffer_ops:
            where[n] = (buffer_ops[buffer], 0)  # read again: the same op
            continue
        meta = n.meta.get("tensor_meta")
        if meta is not None and hasattr(meta, "shape"):
            outputs = [_tensor(meta)]
        elif n in outputs_of:
            outputs = [{"shape": [], "dtype": "float32"} for _ in range(max(outputs_of[n]) + 1)]
            for k, g in outputs_of[n].items():
                if hasattr(g.meta.get("tensor_meta"), "shape"):
                    outputs[k] = _tensor(g.meta["tensor_meta"])
        elif n.op == "get_attr":
            value = getattr(graph_module, n.target)
            outputs = [{"shape": list(value.shape), "dtype": _DTYPES.get(value.dtype, "float32")}]
        else:
            outputs = []
        for o in outputs:
            o["bytes"] = _bytes(o)
        phase = n.meta.get("dp_phase", "forward")
        module = param_module.get(n, n.meta.get("dp_module", ""))
        inputs = [where[i] for i in n.all_input_nodes if where.get(i) is not None]
        if phase == "update" and not module:
            # The optimizer's ops belong to the parameter they update.
            for i in n.all_input_nodes:
                if i in param_module or i.meta.get("dp_phase") == "update":
                    module = param_module.get(i, i.meta.get("dp_module_resolved", ""))
                    if module:
                        break
        n.meta["dp_module_resolved"] = module
        op = {"id": len(ops), "phase": phase if n.op == "call_function" else "forward", "outputs": outputs}
        if n in data:
            op.update(name=unique("input/" + n.target), type="Input", devices=["cpu"], expert_stage=-1)
        elif n.op == "placeholder":
            op.update(name=unique(param_name[n]), type="VariableV2", persistent_bytes=outputs[0]["bytes"])
            outputs[0]["aliases_persistent"] = True
        elif n.op == "get_attr" and buffer is not None:
            module = buffer.rsplit(".", 1)[0] if "." in buffer else ""
            op.update(name=unique(buffer), type="Const")
            buffer_ops[buffer] = op["id"]
        elif n.op == "get_attr":
            op.update(name=unique((module or "const") + "/" + n.target), type="Const")
        else:
            short = _short_name(n.target)
            op.update(name=unique((module or phase) + "/" + short), type="aten." + short)
            in_shapes = [_shape_of(a, graph_module) for a in n.args]
            op["flops"] = _flops(short, n, [tuple(o["shape"]) for o in outputs], in_shapes)
            op["bytes_read"] = sum(ops[i[0]]["outputs"][i[1]]["bytes"] for i in inputs if i[1] < len(ops[i[0]]["outputs"]))
            op["bytes_written"] = 0 if short in _VIEWS else sum(o["bytes"] for o in outputs)
            if phase == "update" and short in ("zeros_like", "zeros", "empty"):
                # Optimizer state: held from step to step.
                op["persistent_bytes"] = sum(o["bytes"] for o in outputs)
                for o in outputs:
                    o["aliases_persistent"] = True
        if module:
            op["colocation_group"] = module
        op["inputs"] = [{"op": i[0], "output": i[1]} for i in dict.fromkeys(inputs)]
        ops.append(op)
        where[n] = (op["id"], 0)
    return {"format": "devplace-graph", "version": 1, "name": graph_name, "ops": ops}


def _load(spec, batch, image_size):
    if spec.endswith(".py"):
        if not os.path.isfile(spec):
            raise ExportError("no such file")
        module_spec = importlib.util.spec_from_file_location("user_model", spec)
        user = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(user)
        if not callable(getattr(user, "make_model", None)):
            raise ExportError("defines no make_model(batch)")
        made = user.make_model(batch)
        if not isinstance(made, (tuple, list)) or len(made) != 3:
            raise ExportError("make_model(batch) must return (model, inputs tuple, target tensor)")
        model, inputs, target = made
        if not isinstance(model, torch.nn.Module):
            raise ExportError(f"make_model(batch) returned a {type(model).__name__} as the model, not a torch.nn.Module")
        inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
        return model, inputs, target, getattr(user, "loss", None), getattr(user, "optimizer", None)
    try:
        import torchvision
    except ImportError:
        raise ExportError("torchvision is not installed (apt-get install python3-torchvision)") from None
    # Classification models only: detection, segmentation and video models
    # take other inputs than one batch of images.
    if spec not in torchvision.models.list_models(module=torchvision.models):
        raise ExportError("neither a torchvision classification model (resnet18, densenet121, ...) nor a .py file")
    with warnings.catch_warnings():  # GoogLeNet's note on its weights' initialisation: not ours to act on
        warnings.simplefilter("ignore", FutureWarning)
        model = getattr(torchvision.models, spec)()
    if spec == "inception_v3":
        model = torchvision.models.inception_v3(aux_logits=False, init_weights=False)
        image_size = max(image_size, 299)
    return model, (torch.randn(batch, 3, image_size, image_size),), torch.randint(0, 1000, (batch,)), None, None


class ExportError(Exception):
    """A problem with the model argument, said in one line."""


def _fail(subject, problem):
    print(f"export_pytorch: error: {subject}: {problem}", file=sys.stderr)
    return 1


def _one_line(error):
    text = " ".join(str(error).split()) or type(error).__name__
    return text if isinstance(error, ExportError) else f"{type(error).__name__}: {text}"


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line with exit 1, as every
    other error here, instead of its usage text and exit 2."""

    def error(self, message):
        sys.exit(_fail("arguments", " ".join(message.split())))


def main():
    parser = _OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a torchvision model name (resnet50, ...) or a Python file defining make_model")
    parser.add_argument("-o", "--output", required=True, help="graph file to write")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--image-size", type=int, default=224, help="for torchvision models")
    options = parser.parse_args()
    if options.batch < 1:
        return _fail("--batch", f"{options.batch} is not a batch size (at least 1)")
    if options.image_size < 1:
        return _fail("--image-size", f"{options.image_size} is not an image size (at least 1 pixel)")
    out_dir = os.path.dirname(os.path.abspath(options.output))
    if not os.path.isdir(out_dir):
        return _fail(options.output, "its folder does not exist")
    # Anything the model or the trace raises is the model's problem: one
    # line naming it, never a traceback, and no file written.
    try:
        model, inputs, target, loss_fn, make_optimizer = _load(options.model, options.batch, options.image_size)
        model.train()
        if not any(p.requires_grad for p in model.parameters()):
            return _fail(options.model, "the model has no trainable parameters: there is no training step to trace")
        graph_module, names = trace_training_step(model, inputs, target, loss_fn, make_optimizer)
        name = os.path.splitext(os.path.basename(options.model))[0]
        graph = to_devplace_graph(graph_module, names, len(inputs), name,
                                  {id(b): n for n, b in model.named_buffers()})
    except Exception as error:  # noqa: BLE001 -- reported, not hidden
        return _fail(options.model, _one_line(error))
    temporary = options.output + ".tmp"
    try:
        with open(temporary, "w") as f:
            json.dump(graph, f)
        os.replace(temporary, options.output)
    except OSError as error:
        if os.path.exists(temporary):
            os.remove(temporary)
        return _fail(options.output, error.strerror or str(error))
    forward = sum(op.get("flops", 0) for op in graph["ops"] if op["phase"] == "forward")
    total = sum(op.get("flops", 0) for op in graph["ops"])
    params = sum(p.numel() for p in model.parameters())
    print(f"wrote {options.output}: {len(graph['ops'])} ops, {forward:.4g} forward FLOPs, {total:.4g} FLOPs per step, "
          f"{params} parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
