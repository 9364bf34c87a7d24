"""Shared by the Python tests: where the command line is, and placements
that run and that do not."""

import os
import pathlib

import numpy as np
import pytest

import devplace

SOURCE_DIR = pathlib.Path(os.environ.get("DEVPLACE_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


@pytest.fixture(scope="session")
def devplace_binary():
    path = os.environ.get("DEVPLACE_BINARY", str(SOURCE_DIR / "build" / "devplace"))
    if not os.path.exists(path):
        pytest.fail(f"the devplace program is not at {path}: build it (scripts/build.sh) or set DEVPLACE_BINARY")
    return path


def unit_placements(graph, cluster, count, seed):
    """`count` op placements made from random devices per unit among those
    each unit may use, so that they all run (memory aside)."""
    env = devplace.PlacementEnv(graph, cluster)
    rng = np.random.default_rng(seed)
    allowed = env.observation_space["allowed"]
    obs, _ = env.reset(seed=seed)
    rows = []
    for _ in range(count):
        units = [rng.choice(np.flatnonzero(row)) for row in obs["allowed"]]
        rows.append(env.op_placement(np.asarray(units)))
    del allowed
    return np.stack(rows)
