"""Simulation from Python is `devplace simulate`'s, bit for bit."""

import json
import subprocess

import numpy as np
import pytest

import devplace
from conftest import unit_placements


def write_placement_file(path, graph, cluster, placement):
    names = cluster.device_names
    document = {"placement": {op: names[d] for op, d in zip(graph.op_names, placement)}}
    path.write_text(json.dumps(document))


def cli_simulate(binary, graph_spec, cluster_spec, placement_path):
    out = subprocess.run([binary, "simulate", "--graph", graph_spec, "--cluster", cluster_spec, "--placement",
                          str(placement_path), "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("graph_spec,cluster_spec", [("tiny", "k80x2"), ("nmt", "p100x4")])
def test_batch_equals_cli_bit_for_bit(tmp_path, devplace_binary, graph_spec, cluster_spec):
    graph, cluster = devplace.Graph(graph_spec), devplace.Cluster(cluster_spec)
    placements = unit_placements(graph, cluster, 4, seed=7)
    # Op by op at random too: most of these split a co-location group or put
    # an op where it cannot run (simulate's invalid, null; NaN here).
    rng = np.random.default_rng(3)
    placements = np.concatenate([placements, rng.integers(0, cluster.num_devices, (2, graph.num_ops))])
    placements = placements.astype(np.int32)
    times = devplace.simulate_batch(graph, cluster, placements)
    assert times.dtype == np.float64 and times.shape == (len(placements),)
    for k, placement in enumerate(placements):
        path = tmp_path / f"p{k}.json"
        write_placement_file(path, graph, cluster, placement)
        cli = cli_simulate(devplace_binary, graph_spec, cluster_spec, path)
        if cli["step_time_s"] is None:
            assert np.isnan(times[k]), k
        else:
            assert times[k] == cli["step_time_s"], (k, times[k].hex(), float(cli["step_time_s"]).hex())
        # One placement's full result is simulate --json's object.
        result = devplace.simulate(graph, cluster, placement).as_dict()
        del cli["graph"], cli["cluster"]
        assert result == cli, k
    assert np.isfinite(times[:4]).all()


def test_batch_is_the_same_whatever_the_workers():
    graph, cluster = devplace.Graph("tiny"), devplace.Cluster("k80x4")
    placements = unit_placements(graph, cluster, 9, seed=1)
    one = devplace.Simulator(graph, cluster, workers=1).run_batch(placements)
    three = devplace.Simulator(graph, cluster, workers=3).run_batch(placements)
    assert np.array_equal(one, three)
    details = devplace.simulate_batch(graph, cluster, placements, details=True)
    assert np.array_equal(details["step_time_s"], one)
    assert details["peak_memory_bytes"].shape == (9, cluster.num_devices)
    assert details["ok"].all() and not details["invalid"].any()


def test_placement_specs_as_simulate_takes_them():
    graph, cluster = devplace.Graph("tiny"), devplace.Cluster("k80x2")
    by_spec = devplace.simulate(graph, cluster, "single:gpu:0")
    assert by_spec.ok and by_spec.step_time_s > 0
    assert by_spec.device_names == cluster.device_names
    assert by_spec.peak_memory_bytes.shape == (cluster.num_devices,)
    assert not by_spec.device_oom.any()


def test_an_empty_batch_gives_an_empty_array():
    graph = devplace.Graph("tiny")
    times = devplace.simulate_batch(graph, "k80x2", np.zeros((0, graph.num_ops), dtype=np.int32))
    assert times.shape == (0,)


def test_model_parameters_as_generate_takes_them():
    small = devplace.Graph("synthetic", ops=120, width=2)
    assert small.num_ops < devplace.Graph("synthetic").num_ops
    assert small.total_flops > 0
