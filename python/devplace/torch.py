"""devplace.torch: a found placement applied to a real PyTorch model.

    import devplace.torch
    placed = devplace.torch.place_module(model, (x,), "k80x2", target=y, method="m_etf")
    # train `placed` with your own loop and optimiser

place_module traces the model's training step (forward, loss, backward,
Adam's update) with the exporter of tools/export_pytorch.py (torch.fx's
make_fx), places that graph with a devplace method, reads the placement
back as modules (`devplace export --format device_map`), moves each module
to its device and has each module's inputs copied to its device as it is
called. A cluster GPU i is torch's cuda:i where torch sees it; without CUDA
(and for the cluster's CPUs) a module runs on torch's CPU: the placement is
then computed and recorded (placed.devplace_device_map), not run in
parallel. docs/python.md says what is not done yet.
"""

import json
import os
import tempfile
import time

import torch

from . import Error, Simulator, _cluster, _place
from . import Graph as _Graph
from . import _export_pytorch as _exporter
from . import placed_executor as _placed_executor


def _torch_device(device):
    """A device_map value (a GPU index among the cluster's GPUs, or "cpu")
    as a torch device."""
    if device == "cpu":
        return torch.device("cpu")
    if torch.cuda.is_available() and int(device) < torch.cuda.device_count():
        return torch.device("cuda", int(device))
    return torch.device("cpu")


def _cluster_torch_devices(cluster):
    """Each cluster device as a torch device: a GPU is cuda:i (its CUDA
    index in a detected cluster, else its place among the cluster's GPUs)
    where torch sees it; a CPU device, and a GPU without CUDA, torch's CPU."""
    devices, gpus = [], 0
    for d in cluster.devices:
        if d["kind"] == "gpu":
            index = d["cuda_index"] if d["cuda_index"] >= 0 else gpus
            gpus += 1
            if torch.cuda.is_available() and index < torch.cuda.device_count():
                devices.append(torch.device("cuda", index))
                continue
        devices.append(torch.device("cpu"))
    return devices


def _module_device_counts(document, graph, placement):
    """Module path -> {cluster device: ops of the module and of its
    submodules there} under `placement` (parameters and forward ops)."""
    device_of_op = dict(zip(graph.op_names, placement.tolist()))
    counts = {}
    for op in document["ops"]:
        module = op.get("colocation_group")
        if module is None or (op.get("phase", "forward") != "forward" and op.get("type") != "VariableV2"):
            continue
        device = device_of_op[op["name"]]
        path = module
        while True:
            below = counts.setdefault(path, {})
            below[device] = below.get(device, 0) + 1
            if not path:
                break
            path = path.rpartition(".")[0]
    return counts


def _device_of_node(fx_graph, counts, fallback):
    """Each call and get_attr node of the module's forward graph: the
    device holding most ops of its module (the innermost one the placement
    knows); a node of the root module's own forward (a concatenation of two
    branches): its first input's device, else `fallback`."""
    devices = {}
    for n in fx_graph.nodes:
        if n.op not in ("call_module", "call_function", "call_method", "get_attr"):
            continue
        path = n.target if n.op in ("call_module", "get_attr") else n.meta.get("devplace_module", "")
        while path and path not in counts:
            path = path.rpartition(".")[0]
        if path:
            device = max(sorted(counts[path]), key=counts[path].get)
        else:
            device = next((devices[i] for i in n.all_input_nodes if i in devices), fallback)
        devices[n] = device
    return devices


def _parallel_executor(model, document, graph, cluster, placement, pin_threads):
    """A PlacedExecutor running `model`'s forward and backward with each of
    the placement's devices on a thread of its own, or the one-line reason
    why not (a forward torch.fx cannot trace, an in-place change of a value
    two devices read)."""
    counts = _module_device_counts(document, graph, placement)
    split = [path for path, below in counts.items() if path and len(below) > 1]
    try:
        fx_graph = _placed_executor.trace_module_graph(model, split)
    except _placed_executor.NotParallel as why:
        return None, f"{type(model).__name__}'s forward runs in order: {why}"
    except Exception as error:  # data-dependent control flow and the like
        return None, f"torch.fx cannot trace {type(model).__name__}'s forward: {_exporter._one_line(error)}"
    used = placement.tolist()
    fallback = max(sorted(set(used)), key=used.count)
    device_of_node = _device_of_node(fx_graph, counts, fallback)
    cores = [list(d["cores"]) for d in cluster.devices]
    try:
        return _placed_executor.PlacedExecutor(model, fx_graph, device_of_node, _cluster_torch_devices(cluster),
                                               cores, pin_threads), None
    except _placed_executor.NotParallel as why:
        return None, f"{type(model).__name__}'s forward runs in order: {why}"


def _pin(placed, pin_modules, document, graph, cluster, simulator):
    """`placed` with every op of the modules of pin_modules moved to the
    device given, simulated again."""
    names = cluster.device_names
    devices = {}
    for module, device in dict(pin_modules).items():
        if isinstance(device, str) and device in names:
            device = names.index(device)
        if isinstance(device, bool) or not isinstance(device, int) or not 0 <= device < len(names):
            raise Error(f"pin_modules: module '{module}': no device {device!r} in cluster '{cluster.name}' "
                        f"({', '.join(names)})")
        devices[str(module)] = device
    group_of = {op["name"]: op.get("colocation_group") for op in document["ops"]}
    placement = placed["placement"].copy()
    pinned = set()
    for k, name in enumerate(graph.op_names):
        group = group_of.get(name)
        path = group
        while path is not None:
            if path in devices:
                placement[k] = devices[path]
                pinned.add(path)
                break
            path = path.rpartition(".")[0] if path else None
    for module in devices:
        if module not in pinned:
            raise Error(f"pin_modules: no module '{module}' among the traced step's modules")
    result = simulator.run(placement)
    if result.invalid or result.failed:
        raise Error(f"pin_modules: the placement does not run on cluster '{cluster.name}': {result.reason}")
    return {"placement": placement, "step_time_s": result.step_time_s}


def _default_target(model, inputs):
    """A target the exporter's default loss takes: class indices for a
    (batch, classes) output, else a tensor of the output's shape."""
    with torch.no_grad():
        main = _exporter._output_tensors(model(*inputs))[0]
    if main.dim() == 2:
        return torch.zeros(main.shape[0], dtype=torch.long)
    return torch.zeros_like(main)


def _move_inputs(device):
    def pre(module, args, kwargs=None):
        return tuple(a.to(device) if torch.is_tensor(a) else a for a in args)
    return pre


def _apply(model, device_map):
    """Moves each named module (or parameter, or buffer) to its device and
    copies a module's tensor inputs to its device when it is called."""
    handles = []
    for name, device in device_map.items():
        target = _torch_device(device)
        try:
            module = model.get_submodule(name) if name else model
        except AttributeError:
            module = None
        if module is not None:
            module.to(target)
            handles.append(module.register_forward_pre_hook(_move_inputs(target)))
            continue
        owner_name, _, attribute = name.rpartition(".")
        owner = model.get_submodule(owner_name) if owner_name else model
        tensor = getattr(owner, attribute)
        if isinstance(tensor, torch.nn.Parameter):
            tensor.data = tensor.data.to(target)
        else:
            setattr(owner, attribute, tensor.to(target))
    return handles


def _unplace(model):
    """Undoes an earlier place_module's forward and hooks, so that the
    model is traced and placed as written."""
    executor = model.__dict__.get("forward")
    if isinstance(executor, _placed_executor.PlacedExecutor):
        executor.close()
        del model.forward
    for handle in getattr(model, "_devplace_hooks", []):
        handle.remove()
    model._devplace_hooks = []


def place_module(model, example_inputs, cluster, target=None, loss=None, method="m_etf", max_evaluations=0,
                 max_seconds=0.0, seed=1, parallel=True, pin_modules=None, pin_threads=True):
    """Places `model`'s training step on `cluster` (a devplace.Cluster, a
    preset name or a cluster file) with `method` (a baseline or search of
    devplace.methods(); searches spend max_evaluations / max_seconds) and
    returns `model` itself, its modules moved to their devices, with
    devplace_device_map (module -> GPU index or "cpu"), devplace_placement
    (device per op of devplace_graph), devplace_step_time_s (simulated)
    and devplace_seconds (the time of each stage: trace, place).
    `target` (default: class indices or zeros shaped like the output) and
    `loss(output, target)` (default: the exporter's, cross entropy) make the
    traced step's loss.

    parallel (default): the model's forward becomes a PlacedExecutor
    (devplace_executor) that runs each device's part of the forward and of
    the backward on a thread of its own, so that a split runs in parallel
    (also over the executor's CPU devices, each its own cores, its thread
    pinned to them unless pin_threads=False);
    devplace_parallel says whether it does, or why not. parallel=False:
    the modules only move to their devices and the forward runs as
    written, one op after the other.

    pin_modules ({module name: cluster device index or name}) puts every op
    of those modules (and of their submodules; the longest name wins) on
    the device given, the method placing the rest."""
    if not isinstance(model, torch.nn.Module):
        raise Error(f"model: a {type(model).__name__}, not a torch.nn.Module")
    inputs = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    if not any(p.requires_grad for p in model.parameters()):
        raise Error("model: no trainable parameters, so no training step to place")
    cluster = _cluster(cluster)
    _unplace(model)
    start = time.perf_counter()
    was_training = model.training
    model.train()
    try:
        if target is None:
            target = _default_target(model, inputs)
        graph_module, names = _exporter.trace_training_step(model, inputs, target, loss)
        document = _exporter.to_devplace_graph(graph_module, names, len(inputs), type(model).__name__,
                                               {id(b): n for n, b in model.named_buffers()})
    except Error:
        raise
    except Exception as error:  # the model's or the trace's problem, in one line
        raise Error(f"model {type(model).__name__}: cannot trace its training step: "
                    f"{_exporter._one_line(error)}") from None
    finally:
        model.train(was_training)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "graph.json")
        with open(path, "w") as f:
            _exporter.json.dump(document, f)
        graph = _Graph(path)
    traced = time.perf_counter()
    simulator = Simulator(graph, cluster, workers=1)
    placed = _place(simulator, method, max_evaluations=max_evaluations, max_seconds=max_seconds, seed=seed)
    if pin_modules:
        placed = _pin(placed, pin_modules, document, graph, cluster, simulator)
    device_map = simulator.device_map(placed["placement"])
    model._devplace_hooks = _apply(model, device_map)
    model.devplace_executor, model.devplace_parallel = None, "not asked for (parallel=False)"
    if parallel:
        executor, why_not = _parallel_executor(model, document, graph, cluster, placed["placement"], pin_threads)
        if executor is not None:
            model.forward = executor  # nn.Module.__call__ (and its hooks) now runs the placed forward
            model.devplace_executor, model.devplace_parallel = executor, True
        else:
            model.devplace_parallel = why_not
    model.devplace_graph = graph
    model.devplace_cluster = cluster
    model._devplace_document = document
    model.devplace_device_map = device_map
    model.devplace_placement = placed["placement"]
    model.devplace_step_time_s = placed["step_time_s"]
    model.devplace_seconds = {"trace": traced - start, "place": time.perf_counter() - traced}
    return model


def save_placement(model, folder):
    """Writes a placed module's traced training step (graph.json) and its
    placement (placement.json, op name -> device name) into `folder`, the
    files `devplace run --graph ... --cluster ... --placement ...` takes, so
    that the C++ executor runs the split step for real: on the executor's
    CPU devices (a cluster from `devplace clusters --detect --cpu-devices
    N`) each device has its own threads and cores. Returns the two paths."""
    if not hasattr(model, "_devplace_document"):
        raise Error("model: not placed by devplace.torch.place_module")
    os.makedirs(folder, exist_ok=True)
    graph_path = os.path.join(folder, "graph.json")
    placement_path = os.path.join(folder, "placement.json")
    with open(graph_path, "w") as f:
        json.dump(model._devplace_document, f)
    names = model.devplace_cluster.device_names
    document = {"format": "devplace-placement", "version": 1, "graph": model.devplace_graph.name,
                "cluster": model.devplace_cluster.name,
                "placement": {op: names[d] for op, d in zip(model.devplace_graph.op_names,
                                                            model.devplace_placement.tolist())}}
    with open(placement_path, "w") as f:
        json.dump(document, f)
    return graph_path, placement_path
