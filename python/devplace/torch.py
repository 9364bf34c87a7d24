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


def _torch_device(device):
    """A device_map value (a GPU index among the cluster's GPUs, or "cpu")
    as a torch device."""
    if device == "cpu":
        return torch.device("cpu")
    if torch.cuda.is_available() and int(device) < torch.cuda.device_count():
        return torch.device("cuda", int(device))
    return torch.device("cpu")


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


def place_module(model, example_inputs, cluster, target=None, loss=None, method="m_etf", max_evaluations=0,
                 max_seconds=0.0, seed=1):
    """Places `model`'s training step on `cluster` (a devplace.Cluster, a
    preset name or a cluster file) with `method` (a baseline or search of
    devplace.methods(); searches spend max_evaluations / max_seconds) and
    returns `model` itself, its modules moved to their devices, with
    devplace_device_map (module -> GPU index or "cpu"), devplace_placement
    (device per op of devplace_graph), devplace_step_time_s (simulated)
    and devplace_seconds (the time of each stage: trace, place).
    `target` (default: class indices or zeros shaped like the output) and
    `loss(output, target)` (default: the exporter's, cross entropy) make the
    traced step's loss."""
    if not isinstance(model, torch.nn.Module):
        raise Error(f"model: a {type(model).__name__}, not a torch.nn.Module")
    inputs = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    if not any(p.requires_grad for p in model.parameters()):
        raise Error("model: no trainable parameters, so no training step to place")
    cluster = _cluster(cluster)
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
    device_map = simulator.device_map(placed["placement"])
    model._devplace_hooks = _apply(model, device_map)
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
