"""The learned methods from Python: guided and the learned placers run as
`devplace place` runs them, a trained policy places zero-shot, and the
module shares one libtorch with `import torch` in either order."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import devplace


def cli_place(binary, tmp_path, *flags):
    out = tmp_path / "run"
    completed = subprocess.run([binary, "place", "--json", "--out", str(out), *flags], capture_output=True, text=True,
                               check=True)
    return json.loads(completed.stdout), out


def placement_file_devices(path, graph, cluster):
    """A placement file (op name -> device name) as a device index per op."""
    with open(path) as f:
        by_name = json.load(f)["placement"]
    device_index = {name: i for i, name in enumerate(cluster.device_names)}
    return np.array([device_index[by_name[op]] for op in graph.op_names], np.int32)


def test_methods_lists_the_learned_methods_as_available():
    kinds = {m["name"]: (m["kind"], m["available"]) for m in devplace.methods()}
    assert kinds["guided"] == ("learned_search", True)
    for name in ("rl", "hdp", "gdp", "mars"):
        assert kinds[name] == ("learned", True)


def test_guided_from_python_equals_the_command_line(devplace_binary, tmp_path):
    graph, cluster = devplace.Graph("tiny"), devplace.Cluster("k80x4")
    ours = devplace.place(graph, cluster, method="guided", max_evaluations=300, seed=3)
    theirs, folder = cli_place(devplace_binary, tmp_path, "--graph", "tiny", "--cluster", "k80x4", "--method", "guided",
                               "--seed", "3", "--max-samples", "300")
    assert ours["method"] == "guided" and theirs["method"] == "guided"
    assert ours["step_time_s"] == theirs["step_time_s"]
    assert ours["evaluations"] == theirs["samples"]
    np.testing.assert_array_equal(ours["placement"],
                                  placement_file_devices(folder / "best_placement.json", graph, cluster))
    # and a search that spent its evaluations is seeded: another seed, same budget, its own run
    again = devplace.place(graph, cluster, method="guided", max_evaluations=300, seed=3)
    np.testing.assert_array_equal(ours["placement"], again["placement"])


def test_a_learned_placer_trains_within_its_budget():
    graph, cluster = devplace.Graph("tiny"), devplace.Cluster("k80x2")
    out = devplace.place(graph, cluster, method="rl", max_steps=3, samples_per_step=4, seed=1)
    assert out["method"] == "rl" and not out["zero_shot"]
    assert out["placement"].shape == (graph.num_ops,)
    assert out["step_time_s"] == devplace.simulate(graph, cluster, out["placement"]).step_time_s
    single = devplace.simulate(graph, cluster, "single:gpu:0").step_time_s
    assert out["step_time_s"] <= single  # the start probes measure single-GPU placements
    assert out["evaluations"] > 0


@pytest.fixture(scope="module")
def gdp_policy(devplace_binary, tmp_path_factory):
    path = tmp_path_factory.mktemp("policy") / "tiny-k80x2.pt"
    subprocess.run([devplace_binary, "train", "--graphs", "tiny", "--cluster", "k80x2", "-o", str(path), "--max-steps",
                    "2", "--samples-per-step", "4", "--seed", "1"], capture_output=True, text=True, check=True)
    return path


def test_a_trained_policy_places_zero_shot_as_the_command_line_does(devplace_binary, tmp_path, gdp_policy):
    graph, cluster = devplace.Graph("tiny"), devplace.Cluster("k80x2")
    ours = devplace.place(graph, cluster, method="gdp", policy=str(gdp_policy), seed=2)
    assert ours["zero_shot"]
    theirs, folder = cli_place(devplace_binary, tmp_path, "--graph", "tiny", "--cluster", "k80x2", "--method", "gdp",
                               "--policy", str(gdp_policy), "--seed", "2")
    assert theirs["zero_shot"]
    assert ours["step_time_s"] == theirs["step_time_s"]
    np.testing.assert_array_equal(ours["placement"],
                                  placement_file_devices(folder / "best_placement.json", graph, cluster))


def test_a_damaged_policy_file_is_one_line(tmp_path):
    damaged = tmp_path / "damaged.pt"
    damaged.write_bytes(b"PK\x03\x04 not a policy at all")
    with pytest.raises(devplace.Error) as e:
        devplace.place("tiny", "k80x2", method="gdp", policy=str(damaged))
    assert "\n" not in str(e.value) and str(e.value)
    with pytest.raises(devplace.Error) as e:
        devplace.place("tiny", "k80x2", method="gdp", policy=str(tmp_path / "missing.pt"))
    assert "\n" not in str(e.value) and "missing.pt" in str(e.value)


@pytest.mark.parametrize("keywords, words", [
    ({"method": "mcmc", "policy": "p.pt"}, "policy applies to the learned placers"),
    ({"method": "m_etf", "max_steps": 3}, "max_steps applies to the learned placers"),
    ({"method": "mcmc", "learning_rate": 0.1}, "learning_rate applies to the learned methods"),
    ({"method": "rl", "guided_learning": "regression"}, "guided_learning applies to guided"),
    ({"method": "guided", "guided_learning": "sideways"}, "guided_learning must be regression or reinforce"),
    ({"method": "rl", "samples_per_step": 0}, "samples_per_step must be 1 to 1024"),
    ({"method": "guided", "learning_rate": float("nan")}, "learning_rate must be a finite number over 0"),
    ({"method": "gdp", "max_steps": -1}, "max_steps must be 0 or more"),
    ({"method": "rl", "algorithm": "sgd", "max_steps": 1}, "sgd"),
])
def test_a_learned_keyword_out_of_place_is_one_line(keywords, words):
    with pytest.raises(devplace.Error, match=words) as e:
        devplace.place("tiny", "k80x2", **keywords)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("order", ["torch first", "devplace first"])
def test_torch_and_devplace_share_one_libtorch_in_either_order(order):
    imports = "import torch, devplace" if order == "torch first" else "import devplace, torch"
    script = imports + """
import numpy as np
out = devplace.place("tiny", "k80x2", method="guided", max_evaluations=100, seed=1)
assert out["placement"].shape == (devplace.Graph("tiny").num_ops,)
x = torch.ones(3, requires_grad=True)
(x * 2).sum().backward()
assert x.grad.tolist() == [2.0, 2.0, 2.0]
print("ok")
"""
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=os.environ.copy())
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.strip() == "ok"


def test_place_writes_the_run_folder_the_command_line_writes(devplace_binary, tmp_path):
    graph, cluster = devplace.Graph("tiny"), devplace.Cluster("k80x2")
    ours = devplace.place(graph, cluster, method="mcmc", max_evaluations=200, seed=2, out=tmp_path / "ours")
    theirs, folder = cli_place(devplace_binary, tmp_path, "--graph", "tiny", "--cluster", "k80x2", "--method", "mcmc",
                               "--seed", "2", "--max-samples", "200")
    assert ours["out"] == str(tmp_path / "ours")
    assert ours["placement_file"] == str(tmp_path / "ours" / "best_placement.json")
    with open(ours["placement_file"]) as f, open(folder / "best_placement.json") as g:
        assert json.load(f)["placement"] == json.load(g)["placement"]
    np.testing.assert_array_equal(placement_file_devices(ours["placement_file"], graph, cluster), ours["placement"])
    assert sorted(os.listdir(tmp_path / "ours")) == ["best_placement.json"]  # a search keeps no checkpoint


def test_a_learned_run_resumes_from_its_checkpoint_as_the_command_line_does(devplace_binary, tmp_path):
    out = tmp_path / "rl"
    first = devplace.place("tiny", "k80x2", method="rl", max_steps=3, samples_per_step=4, seed=1, out=out)
    assert first["evaluations"] == 12
    assert {"best_placement.json", "checkpoint.pt", "curve.csv"} <= set(os.listdir(out))
    resumed = devplace.place("tiny", "k80x2", method="rl", max_steps=5, samples_per_step=4, seed=1, out=out,
                             resume=True)
    assert resumed["evaluations"] == 20  # continued from 12: the budget counts from the first run's start
    with open(out / "curve.csv") as f:
        assert [line.split(",")[0] for line in f.read().splitlines()[1:]] == ["1", "2", "3", "4", "5"]
    # the command line resumes the folder Python wrote, and Python the command line's
    completed = subprocess.run([devplace_binary, "place", "--json", "--graph", "tiny", "--cluster", "k80x2",
                                "--method", "rl", "--max-steps", "6", "--samples-per-step", "4", "--seed", "1",
                                "--resume", "--out", str(out)], capture_output=True, text=True, check=True)
    assert json.loads(completed.stdout)["samples"] == 24
    again = devplace.place("tiny", "k80x2", method="rl", max_steps=7, samples_per_step=4, seed=1, out=out,
                           resume=True)
    assert again["evaluations"] == 28


def test_a_run_folder_is_refused_unless_resumed_or_overwritten_in_one_line(tmp_path):
    out = tmp_path / "run"
    devplace.place("tiny", "k80x2", method="mcmc", max_evaluations=50, seed=1, out=out)
    with pytest.raises(devplace.Error, match="holds a previous run") as e:
        devplace.place("tiny", "k80x2", method="mcmc", max_evaluations=50, seed=1, out=out)
    assert "\n" not in str(e.value)
    replaced = devplace.place("tiny", "k80x2", method="m_etf", out=out, overwrite=True)
    assert replaced["method"] == "m_etf"
    refused = {
        "keeps no checkpoint": dict(method="mcmc", out=out, resume=True),
        "not both": dict(method="rl", max_steps=1, out=out, resume=True, overwrite=True),
        "give out": dict(method="rl", max_steps=1, resume=True),
        "checkpoint_seconds must be": dict(method="rl", max_steps=1, out=tmp_path / "new", checkpoint_seconds=-1.0),
        "no checkpoint to resume from": dict(method="rl", max_steps=1, out=tmp_path / "empty", resume=True),
    }
    for message, keywords in refused.items():
        with pytest.raises(devplace.Error, match=message):
            devplace.place("tiny", "k80x2", **keywords)
    assert not (tmp_path / "new").exists()  # a refused call writes nothing
    a_file = tmp_path / "file"
    a_file.write_text("")
    with pytest.raises(devplace.Error, match="is not a folder"):
        devplace.place("tiny", "k80x2", method="m_etf", out=a_file)
