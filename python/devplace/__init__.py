"""devplace from Python: graphs, clusters, the step simulator, the placing
methods and a Gymnasium-style placement environment (docs/python.md).

    PYTHONPATH=build/python python3 -c "import devplace; print(devplace.methods())"

Every bad input raises devplace.Error (a ValueError) carrying the command
line's one-line message.

Importing it loads no torch: the learned methods (rl, hdp, gdp, mars and
guided) are in the extension _devplace_learned, which links libtorch and is
imported on their first place() (docs/python.md).
"""

import os as _os

from ._devplace import (Cluster, Error, Graph, SimResult, Simulator, cluster_presets, generate_cluster, methods,
                        models)

__all__ = ["Cluster", "Error", "Graph", "SimResult", "Simulator", "cluster_presets", "methods", "models",
           "simulate", "simulate_batch", "place", "PlacementEnv", "generate_cluster", "detect_cluster"]


def _graph(graph):
    return graph if isinstance(graph, Graph) else Graph(graph)


def _cluster(cluster):
    return cluster if isinstance(cluster, Cluster) else Cluster(cluster)


def _simulator(graph, cluster, op_times=None, workers=0):
    return Simulator(_graph(graph), _cluster(cluster), op_times=op_times, workers=workers)


def simulate(graph, cluster, placement, op_times=None):
    """One training step of `placement` (a device index per op, or what
    `devplace simulate --placement` takes: "single:DEVICE", "expert", a
    placement file) as `devplace simulate` runs it: a SimResult."""
    return _simulator(graph, cluster, op_times, workers=1).run(placement)


def simulate_batch(graph, cluster, placements, workers=0, op_times=None, details=False):
    """Step times (numpy float64, seconds; NaN where a placement cannot run)
    of an integer array [n, ops] of placements, simulated over `workers`
    threads (0: one per core) with Python's lock released. For many calls on
    one graph, make a devplace.Simulator once and call its run_batch()."""
    return _simulator(graph, cluster, op_times, workers).run_batch(placements, details=details)


# The methods whose runners need torch: those of the learned kinds, which
# `devplace` hands to devplace-learn.
_LEARNED_KINDS = ("learned", "learned_search")
_learned_method_names = frozenset(m["name"] for m in methods() if m["kind"] in _LEARNED_KINDS)


def _place(simulator, method, **keywords):
    """_place of the extension that runs `method`: _devplace_learned (with
    torch, imported here on first use) for a learned one, else _devplace.
    An unknown name goes to _devplace, which names the known methods."""
    if isinstance(method, str) and method in _learned_method_names:
        from . import _devplace_learned as extension
    else:
        from . import _devplace as extension
    return extension._place(simulator, method, **keywords)


def place(graph, cluster, method="m_etf", max_evaluations=0, max_seconds=0.0, seed=1, op_times=None, *,
          max_steps=None, policy=None, samples_per_step=None, learning_rate=None, algorithm=None, workers=None,
          guided_learning=None, out=None, resume=False, overwrite=False, checkpoint_seconds=None):
    """Runs any method of devplace.methods() as `devplace place` does and
    returns a dict: method, placement (int32 per op), step_time_s, result
    (SimResult), note, evaluations, seconds, zero_shot.

    A search (mcmc, guided) spends `max_evaluations` simulator runs and
    `max_seconds` (0: its default). A learned placer (rl, hdp, gdp, mars)
    trains within max_steps updates, max_evaluations sampled placements or
    max_seconds (none given: 120 s); `policy`, a file `devplace train`
    wrote, places zero-shot with no budget (or max_steps=0) and is
    fine-tuned with one; the first call of one of these (and of guided)
    loads libtorch, which nothing else here loads. The other keywords are
    `devplace place`'s flags of the same names; None takes the method's
    default, and one the method would ignore is refused.

    `out` is the run folder of `devplace place --out`: best_placement.json
    for every method, and for the learned ones (and guided) curve.csv and
    checkpoint.pt, written every `checkpoint_seconds` (default 30); the
    dict then also has out and placement_file. A folder holding a previous
    run is refused unless resume=True continues it from its checkpoint
    (a learned method; the budget counts from the start of the first run)
    or overwrite=True replaces it."""
    simulator = graph if isinstance(graph, Simulator) else _simulator(graph, cluster, op_times, workers=1)
    return _place(simulator, method, max_evaluations=max_evaluations, max_seconds=max_seconds, seed=seed,
                  max_steps=max_steps, policy=None if policy is None else str(policy),
                  samples_per_step=samples_per_step, learning_rate=learning_rate, algorithm=algorithm, workers=workers,
                  guided_learning=guided_learning, out=None if out is None else _os.fspath(out), resume=resume,
                  overwrite=overwrite, checkpoint_seconds=checkpoint_seconds)


def _devplace_program():
    """The devplace program: $DEVPLACE_BINARY, else the one built beside
    this package (build/python/devplace -> build/devplace), else PATH's."""
    import os
    import pathlib
    import shutil
    if os.environ.get("DEVPLACE_BINARY"):
        return os.environ["DEVPLACE_BINARY"]
    beside = pathlib.Path(__file__).resolve().parents[2] / "devplace"
    if beside.is_file():
        return str(beside)
    found = shutil.which("devplace")
    if not found:
        raise Error("detect_cluster: the devplace program is not found: set DEVPLACE_BINARY or put devplace on PATH")
    return found


def detect_cluster(cpu_devices=1, gpus=True, path=None):
    """This machine measured as `devplace clusters --detect` measures it
    (CPU devices owning disjoint cores, one device per CUDA GPU, copy links
    timed), run by the devplace program (the executor is not in this
    module, so that importing it stays light): a Cluster. With `path`, the
    cluster file is also kept there."""
    import os
    import subprocess
    import tempfile
    if isinstance(cpu_devices, bool) or not isinstance(cpu_devices, int) or not 1 <= cpu_devices <= 64:
        raise Error(f"detect_cluster: cpu_devices must be an integer from 1 to 64, not {cpu_devices!r}")
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "cluster.json") if path is None else str(path)
        command = [_devplace_program(), "clusters", "--detect", "--cpu-devices", str(cpu_devices), "-o", out]
        if not gpus:
            command.append("--no-gpus")
        run = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if run.returncode != 0:
            lines = run.stderr.strip().splitlines()
            raise Error(lines[-1] if lines else f"detect_cluster: devplace exited with status {run.returncode}")
        return Cluster(out)


from .env import PlacementEnv  # noqa: E402  (it imports the names above)
from . import spaces  # noqa: E402,F401

try:  # registered where Gymnasium is installed (it is not a Debian package)
    import gymnasium as _gymnasium
    _gymnasium.register(id="devplace/Placement-v0", entry_point="devplace.env:PlacementEnv")
except Exception:  # ImportError, or an older Gymnasium without register()
    pass
