"""devplace.torch.place_module: a placed module trains as the unplaced one."""

import copy
import json
import subprocess

import pytest

torch = pytest.importorskip("torch", reason="python3-torch is not installed")
import devplace  # noqa: E402
import devplace.torch  # noqa: E402


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 10))


def train(model, steps):
    """Outputs, losses and gradients of `steps` SGD steps on fixed batches."""
    generator = torch.Generator().manual_seed(1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for _ in range(steps):
        x = torch.randn(8, 32, generator=generator)
        y = torch.randint(0, 10, (8,), generator=generator)
        optimizer.zero_grad()
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y.to(out.device))
        loss.backward()
        history.append((out.detach().cpu(), loss.detach().cpu(), [p.grad.detach().cpu() for p in model.parameters()]))
        optimizer.step()
    return history


def test_a_split_placement_trains_as_the_unplaced_module():
    reference = make_model()
    model = copy.deepcopy(reference)
    x, y = torch.randn(8, 32), torch.randint(0, 10, (8,))
    # random: units spread over the cluster's devices, so the modules split.
    placed = devplace.torch.place_module(model, (x,), "k80x2", target=y, method="random", seed=3)
    assert placed is model
    assert len(set(placed.devplace_device_map.values())) >= 2, placed.devplace_device_map
    assert placed.devplace_step_time_s > 0
    assert placed.devplace_placement.shape == (placed.devplace_graph.num_ops,)
    for (out_a, loss_a, grads_a), (out_b, loss_b, grads_b) in zip(train(reference, 4), train(placed, 4)):
        torch.testing.assert_close(out_a, out_b)
        torch.testing.assert_close(loss_a, loss_b)
        for a, b in zip(grads_a, grads_b):
            torch.testing.assert_close(a, b)


def assert_trains_alike(reference, placed, steps):
    for (out_a, loss_a, grads_a), (out_b, loss_b, grads_b) in zip(train(reference, steps), train(placed, steps)):
        torch.testing.assert_close(out_a, out_b)
        torch.testing.assert_close(loss_a, loss_b)
        for a, b in zip(grads_a, grads_b):
            torch.testing.assert_close(a, b)


@pytest.fixture(scope="module")
def host_cluster(devplace_binary, tmp_path_factory):
    """This machine as two CPU devices, each its own cores, as the executor
    runs them."""
    path = tmp_path_factory.mktemp("host") / "host.json"
    subprocess.run([devplace_binary, "clusters", "--detect", "--cpu-devices", "2", "--no-gpus", "-o", str(path)],
                   capture_output=True, text=True, check=True)
    return path


def test_a_split_over_the_executors_cpu_devices_trains_as_the_unplaced_module_and_runs_there(
        devplace_binary, host_cluster, tmp_path):
    reference = make_model()
    model = copy.deepcopy(reference)
    x, y = torch.randn(8, 32), torch.randint(0, 10, (8,))
    placed = devplace.torch.place_module(model, (x,), str(host_cluster), target=y, method="random", seed=3)
    assert set(placed.devplace_placement.tolist()) == {0, 1}  # both CPU devices hold ops
    assert_trains_alike(reference, placed, 5)
    # the same split step run by the executor, each CPU device on its own cores
    graph_path, placement_path = devplace.torch.save_placement(placed, tmp_path / "saved")
    completed = subprocess.run([devplace_binary, "run", "--graph", graph_path, "--cluster", str(host_cluster),
                                "--placement", placement_path, "--steps", "2", "--json"],
                               capture_output=True, text=True, check=True)
    run = json.loads(completed.stdout)
    assert sorted(d["name"] for d in run["devices"] if d["ops"] > 0) == ["cpu:0", "cpu:1"]


def test_save_placement_refuses_a_model_it_did_not_place(tmp_path):
    with pytest.raises(devplace.Error, match="not placed"):
        devplace.torch.save_placement(make_model(), tmp_path)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the GPU path of place_module is not run")
def test_gpus_of_the_cluster_are_cuda_devices():
    model = make_model()
    placed = devplace.torch.place_module(model, (torch.randn(8, 32),), "k80x2", method="single_gpu")
    assert next(placed[0].parameters()).device.type == "cuda"


def test_bad_models_raise_one_line():
    with pytest.raises(devplace.Error, match="torch.nn.Module"):
        devplace.torch.place_module("not a model", (torch.randn(2, 3),), "k80x2")
    frozen = torch.nn.Linear(3, 2).requires_grad_(False)
    with pytest.raises(devplace.Error, match="no trainable parameters"):
        devplace.torch.place_module(frozen, (torch.randn(2, 3),), "k80x2")
    with pytest.raises(devplace.Error, match="cannot trace") as e:
        devplace.torch.place_module(torch.nn.Linear(3, 2), (torch.randn(2, 5),), "k80x2")  # wrong input width
    assert "\n" not in str(e.value)
