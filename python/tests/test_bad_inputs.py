"""Bad inputs raise devplace.Error with one line; none crashes the interpreter."""

import numpy as np
import pytest

import devplace


def raises_one_line(call, match=None):
    with pytest.raises(devplace.Error, match=match) as e:
        call()
    message = str(e.value)
    assert message and "\n" not in message, message
    return message


@pytest.fixture(scope="module")
def tiny():
    return devplace.Simulator(devplace.Graph("tiny"), devplace.Cluster("k80x2"))


def test_error_is_a_value_error():
    assert issubclass(devplace.Error, ValueError)


def test_bad_placements(tiny):
    n = tiny.graph.num_ops
    raises_one_line(lambda: tiny.run(np.zeros(n - 1, dtype=np.int32)), "entries, expected")
    raises_one_line(lambda: tiny.run(np.zeros((n, 1), dtype=np.int32)), "shape")
    raises_one_line(lambda: tiny.run(np.full(n, 3, dtype=np.int32)), "out of range")
    raises_one_line(lambda: tiny.run(np.full(n, -1, dtype=np.int64)), "out of range")
    raises_one_line(lambda: tiny.run(np.full(n, np.nan)), "dtype float64")
    raises_one_line(lambda: tiny.run(np.zeros(n, dtype=bool)), "dtype bool")
    raises_one_line(lambda: tiny.run(["gpu:0"] * n), "dtype")
    raises_one_line(lambda: tiny.run(np.full(n, 2**40, dtype=np.uint64)), "out of range")
    raises_one_line(lambda: tiny.run("nowhere/placement.json"))
    raises_one_line(lambda: tiny.run_batch(np.zeros(n, dtype=np.int32)), "2 dimensions")
    raises_one_line(lambda: tiny.run_batch(np.zeros((2, n + 1), dtype=np.int32)), "shape")
    raises_one_line(lambda: tiny.run_batch([[0] * n, [0]]), "not an array|dtype|dimensions")
    bad = np.zeros((3, n), dtype=np.int32)
    bad[2, 5] = 7
    raises_one_line(lambda: tiny.run_batch(bad), r"placements\[2, 5\]: device 7")


def test_bad_graphs_and_clusters(tmp_path):
    raises_one_line(lambda: devplace.Graph("no_such_model"), "neither a built-in model")
    raises_one_line(lambda: devplace.Graph("synthetic", ops=0), "ops")
    raises_one_line(lambda: devplace.Graph("synthetic", colour=3))
    raises_one_line(lambda: devplace.Graph("synthetic", ops=1.5), "integer")
    raises_one_line(lambda: devplace.Graph("synthetic", ops=2**70), "range")
    damaged = tmp_path / "damaged.json"
    damaged.write_text('{"ops": [{"name": "a", "type": ')
    raises_one_line(lambda: devplace.Graph(str(damaged)))
    onnx = tmp_path / "damaged.onnx"
    onnx.write_bytes(b"\x08\x07\x12\x05garbage\xff\xfe" * 10)
    raises_one_line(lambda: devplace.Graph(str(onnx)))
    raises_one_line(lambda: devplace.Cluster("no_such_cluster"))
    cluster = tmp_path / "cluster.json"
    cluster.write_text("[1, 2")
    raises_one_line(lambda: devplace.Cluster(str(cluster)))
    raises_one_line(lambda: devplace.Simulator(devplace.Graph("tiny"), devplace.Cluster("k80x2"), workers=-1))
    raises_one_line(lambda: devplace.simulate("tiny", "k80x2", "single:0", op_times=str(tmp_path / "none.json")))


def test_bad_method_arguments():
    raises_one_line(lambda: devplace.place("tiny", "k80x2", method="no_such_method"), "no_such_method")
    raises_one_line(lambda: devplace.place("tiny", "k80x2", method="mcmc", max_seconds=float("nan")), "max_seconds")
    raises_one_line(lambda: devplace.place("tiny", "k80x2", method="mcmc", max_evaluations=-3), "max_evaluations")
    raises_one_line(lambda: devplace.place("tiny", "k80x2", method="mcmc", seed=-1), "seed")


def test_bad_actions():
    env = devplace.PlacementEnv("tiny", "k80x2")
    env.reset()
    u = env.num_units
    raises_one_line(lambda: env.step(np.zeros(u + 1, dtype=np.int64)), "entries, expected")
    raises_one_line(lambda: env.step(np.full(u, 9)), "out of range")
    raises_one_line(lambda: env.step(np.full(u, np.nan)), "dtype float64")
    raises_one_line(lambda: env.step(None), "dtype")
    # A refused action leaves the episode where it was.
    obs, reward, terminated, _, _ = env.step(np.zeros(u, dtype=np.int64))
    assert terminated
    seq = devplace.PlacementEnv("tiny", "k80x2", mode="sequential")
    seq.reset()
    raises_one_line(lambda: seq.step(1.0), "integer")
    raises_one_line(lambda: seq.step(np.nan), "integer")
    raises_one_line(lambda: seq.step(3), "out of range")
    raises_one_line(lambda: seq.step(True), "integer")
    raises_one_line(lambda: devplace.PlacementEnv("tiny", "k80x2", mode="sideways"), "mode")
    raises_one_line(lambda: devplace.PlacementEnv("tiny", "k80x2", failing_signal="loud"), "failing_signal")
    raises_one_line(lambda: devplace.PlacementEnv("tiny", "k80x2", failing_runtime_s=float("nan")), "failing_runtime_s")
