"""`import devplace` and everything that does not learn run without torch,
as the `devplace` program does: libtorch is mapped into the process only
once a learned method is placed (the extension _devplace_learned). Each
check runs in a fresh interpreter, as this one may have loaded torch."""

import json
import os
import subprocess
import sys

import pytest

import devplace

# What the script reports: whether libtorch is mapped, and which of torch
# and the learned extension Python has imported.
REPORT = """
import json, sys
with open("/proc/self/maps") as f:
    maps = f.read()
print(json.dumps({"libtorch": "libtorch" in maps, "torch": "torch" in sys.modules,
                  "learned": "devplace._devplace_learned" in sys.modules}))
"""

EVERYTHING_BUT_LEARNING = """
import numpy as np
import devplace
graph, cluster = devplace.Graph("tiny"), devplace.Cluster("k80x2")
assert devplace.simulate(graph, cluster, "single:gpu:0").step_time_s > 0
placements = np.zeros((4, graph.num_ops), np.int32)
assert devplace.simulate_batch(graph, cluster, placements, workers=2).shape == (4,)
for method in ("m_etf", "scotch", "random"):
    assert devplace.place(graph, cluster, method=method)["placement"].shape == (graph.num_ops,)
assert devplace.place(graph, cluster, method="mcmc", max_evaluations=50)["evaluations"] > 0
assert len(devplace.methods()) > 0
env = devplace.PlacementEnv(graph, cluster)
obs, _ = env.reset(seed=1)
env.step(np.zeros(len(obs["allowed"]), np.int64))
devplace.generate_cluster(7, "mixed")
"""


def run_script(script):
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=os.environ.copy())
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_import_simulate_and_the_baselines_and_searches_load_no_torch():
    assert run_script(EVERYTHING_BUT_LEARNING + REPORT) == {"libtorch": False, "torch": False, "learned": False}


@pytest.mark.parametrize("method", ["guided", "rl"])
def test_a_learned_method_loads_the_learned_extension_and_libtorch(method):
    # What the first test asserts absent is what a learned place() brings:
    # the check can see libtorch.
    place = f"""
import devplace
out = devplace.place("tiny", "k80x2", method="{method}", max_evaluations=40, seed=1)
assert out["method"] == "{method}" and out["evaluations"] > 0
assert isinstance(out["result"], devplace.SimResult)
"""
    report = run_script(place + REPORT)
    assert report["libtorch"] and report["learned"]


def test_the_learned_extensions_errors_are_devplace_errors_in_one_line():
    # Raised in _devplace_learned: still devplace.Error, the one class.
    with pytest.raises(devplace.Error, match="max_steps must be 0 or more") as e:
        devplace.place("tiny", "k80x2", method="rl", max_steps=-1)
    assert "\n" not in str(e.value)
    with pytest.raises(devplace.Error, match="does not read it"):
        devplace.place("tiny", "k80x2", method="guided", max_steps=1)
    with pytest.raises(devplace.Error, match="unknown method 'nope'"):
        devplace.place("tiny", "k80x2", method="nope")
