"""devplace.torch.place_module: a placed module trains as the unplaced one."""

import copy

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
