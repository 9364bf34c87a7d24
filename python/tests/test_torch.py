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


class TwoTowers(torch.nn.Module):
    """Two parallel towers merged by a head: a split puts a tower on each device."""

    def __init__(self):
        super().__init__()
        self.tower_a = torch.nn.Sequential(torch.nn.Linear(32, 48), torch.nn.ReLU(), torch.nn.Linear(48, 48))
        self.tower_b = torch.nn.Sequential(torch.nn.Linear(32, 48), torch.nn.Tanh(), torch.nn.Linear(48, 48))
        self.head = torch.nn.Linear(96, 10)

    def forward(self, x):
        return self.head(torch.relu(torch.cat([self.tower_a(x), self.tower_b(x)], dim=1)))


def make_towers():
    torch.manual_seed(0)
    return TwoTowers()


TOWERS_SPLIT = {"tower_a": 0, "tower_b": "cpu:1", "head": 0}


def test_a_parallel_split_runs_each_device_on_a_thread_of_its_own_and_trains_as_the_unplaced_module(host_cluster):
    import threading
    reference = make_towers()
    x, y = torch.randn(8, 32), torch.randint(0, 10, (8,))
    placed = devplace.torch.place_module(copy.deepcopy(reference), (x,), str(host_cluster), target=y,
                                         pin_modules=TOWERS_SPLIT)
    assert placed.devplace_parallel is True
    executor = placed.devplace_executor
    assert [s.device for s in executor.stages] == [0, 1, 0]  # tower a, tower b, the head
    assert_trains_alike(reference, placed, 4)
    threads = executor.last_threads  # of the last step's forward and backward
    assert sorted(threads) == [0, 1]
    for phase in ("forward", "backward"):
        assert len(threads[0][phase]) == 1 and len(threads[1][phase]) == 1, threads
        assert threads[0][phase] != threads[1][phase], threads
        assert threading.get_ident() not in threads[0][phase] | threads[1][phase]
    # without autograd (no_grad, eval) the same outputs too
    with torch.no_grad():
        torch.testing.assert_close(placed.eval()(x), reference.eval()(x))


def test_a_random_split_with_many_stages_trains_as_the_unplaced_module(host_cluster):
    # random: modules alternate between the devices, so values cross back
    # and forth and each device runs several stages in each direction.
    reference = make_towers()
    x, y = torch.randn(8, 32), torch.randint(0, 10, (8,))
    tried = 0
    for seed in range(1, 30):
        placed = devplace.torch.place_module(copy.deepcopy(reference), (x,), str(host_cluster), target=y,
                                             method="random", seed=seed)
        assert placed.devplace_parallel is True
        if len(placed.devplace_executor.stages) < 5:
            continue
        assert_trains_alike(copy.deepcopy(reference), placed, 3)
        tried += 1
        if tried == 2:
            break
    assert tried == 2, "no random placement of 29 split the towers into 5 stages or more"


def test_inputs_that_need_gradients_get_them_from_the_parallel_backward(host_cluster):
    reference = make_towers()
    placed = devplace.torch.place_module(copy.deepcopy(reference), (torch.randn(8, 32),), str(host_cluster),
                                         pin_modules=TOWERS_SPLIT)
    x = torch.randn(8, 32)
    gradients = []
    for model in (reference, placed):
        leaf = x.clone().requires_grad_()
        model(leaf).square().sum().backward()
        gradients.append(leaf.grad)
    torch.testing.assert_close(gradients[0], gradients[1])


def test_an_error_on_a_device_thread_raises_in_the_caller_and_the_module_still_runs(host_cluster):
    reference = make_towers()
    placed = devplace.torch.place_module(copy.deepcopy(reference), (torch.randn(8, 32),), str(host_cluster),
                                         pin_modules=TOWERS_SPLIT)
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        placed(torch.randn(8, 31))  # each tower's first Linear refuses it, on its own thread
    assert_trains_alike(reference, placed, 2)


class ChecksBatchSize(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(32, 10)

    def forward(self, x):
        y = self.linear(x)
        return y if x.shape[0] > 4 else -y  # control flow on a shape: torch.fx.symbolic_trace cannot trace it


class ScalesInPlace(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(32, 10)
        self.b = torch.nn.Tanh()

    def forward(self, x):
        a = self.a(x)
        b = self.b(a)
        a.mul_(2)  # after b read it, on another device
        return a + b


def test_forwards_the_executor_cannot_split_run_in_order_and_say_why(host_cluster):
    x, y = torch.randn(8, 32), torch.randint(0, 10, (8,))
    torch.manual_seed(0)
    reference = ChecksBatchSize()
    placed = devplace.torch.place_module(copy.deepcopy(reference), (x,), str(host_cluster), target=y)
    assert "torch.fx cannot trace" in placed.devplace_parallel and "\n" not in placed.devplace_parallel
    assert_trains_alike(reference, placed, 2)
    torch.manual_seed(0)
    reference = ScalesInPlace()
    placed = devplace.torch.place_module(copy.deepcopy(reference), (x,), str(host_cluster), target=y,
                                         pin_modules={"a": 0, "b": 1})
    assert placed.devplace_parallel.endswith("'mul_' modifies 'a' in place, which another device reads")
    assert_trains_alike(reference, placed, 2)


def test_parallel_false_runs_the_forward_as_written(host_cluster):
    reference = make_towers()
    placed = devplace.torch.place_module(copy.deepcopy(reference), (torch.randn(8, 32),), str(host_cluster),
                                         pin_modules=TOWERS_SPLIT, parallel=False)
    assert placed.devplace_executor is None and "parallel=False" in placed.devplace_parallel
    assert "forward" not in placed.__dict__
    assert_trains_alike(reference, placed, 2)


def test_placing_a_placed_module_again_places_it_anew(host_cluster):
    reference = make_towers()
    x = torch.randn(8, 32)
    placed = devplace.torch.place_module(copy.deepcopy(reference), (x,), str(host_cluster), pin_modules=TOWERS_SPLIT)
    again = devplace.torch.place_module(placed, (x,), str(host_cluster), pin_modules={"tower_a": 1, "tower_b": 0})
    assert [s.device for s in again.devplace_executor.stages][:2] == [1, 0]
    assert_trains_alike(reference, again, 2)


def test_pin_modules_refuses_unknown_modules_and_devices_in_one_line(host_cluster):
    x = torch.randn(8, 32)
    with pytest.raises(devplace.Error, match="no module 'tower_c'"):
        devplace.torch.place_module(make_towers(), (x,), str(host_cluster), pin_modules={"tower_c": 0})
    with pytest.raises(devplace.Error, match="no device 2 in cluster") as e:
        devplace.torch.place_module(make_towers(), (x,), str(host_cluster), pin_modules={"tower_a": 2})
    assert "\n" not in str(e.value)


@pytest.mark.skipif(torch.cuda.device_count() < 2,
                    reason="fewer than 2 CUDA devices: the parallel GPU path of place_module is not run")
def test_a_split_over_two_gpus_runs_on_cuda_devices_and_trains_as_the_unplaced_module():
    reference = make_towers()
    x, y = torch.randn(8, 32), torch.randint(0, 10, (8,))
    placed = devplace.torch.place_module(copy.deepcopy(reference), (x,), "k80x2", target=y,
                                         pin_modules={"tower_a": "gpu:0", "tower_b": "gpu:1", "head": "gpu:0"})
    assert placed.devplace_parallel is True
    assert next(placed.tower_b.parameters()).device == torch.device("cuda", 1)
    assert_trains_alike(reference, placed, 3)


class EncoderClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 2)
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        return self.head(self.encoder(x).mean(dim=1))


def test_a_torch_nn_module_split_over_devices_is_traced_into(host_cluster):
    # torch.fx keeps torch.nn's own modules whole; one whose layers the
    # placement splits is traced into, each layer on its device.
    torch.manual_seed(0)
    reference = EncoderClassifier()
    x, y = torch.randn(4, 6, 16), torch.randint(0, 10, (4,))
    placed = devplace.torch.place_module(copy.deepcopy(reference), (x,), str(host_cluster), target=y,
                                         pin_modules={"encoder.layers.0": 0, "encoder.layers.1": 1, "head": 1})
    assert placed.devplace_parallel is True
    devices = {n.target: s.device for s in placed.devplace_executor.stages for n in s.nodes
               if n.op == "call_module"}
    assert devices == {"encoder.layers.0": 0, "encoder.layers.1": 1, "head": 1}
    generator = torch.Generator().manual_seed(1)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (reference, placed)]
    for _ in range(3):
        batch = torch.randn(4, 6, 16, generator=generator)
        results = []
        for model, optimizer in zip((reference, placed), optimizers):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(batch), y)
            loss.backward()
            results.append((loss.detach(), [p.grad.clone() for p in model.parameters()]))
            optimizer.step()
        torch.testing.assert_close(results[0][0], results[1][0])
        for a, b in zip(results[0][1], results[1][1]):
            torch.testing.assert_close(a, b)


def test_a_copy_of_a_placed_module_runs_in_parallel_on_its_own_parameters(host_cluster):
    reference = make_towers()
    placed = devplace.torch.place_module(copy.deepcopy(reference), (torch.randn(8, 32),), str(host_cluster),
                                         pin_modules=TOWERS_SPLIT)
    twin = copy.deepcopy(placed)
    assert twin.devplace_executor is not placed.devplace_executor and twin.devplace_executor.model is twin
    assert_trains_alike(reference, twin, 2)
    assert sorted(twin.devplace_executor.last_threads) == [0, 1]
    # the original's parameters did not move
    for a, b in zip(placed.parameters(), make_towers().parameters()):
        torch.testing.assert_close(a, b)


def test_a_second_backward_through_a_placed_module_raises_one_line(host_cluster):
    placed = devplace.torch.place_module(make_towers(), (torch.randn(8, 32),), str(host_cluster),
                                         pin_modules=TOWERS_SPLIT)
    loss = placed(torch.randn(8, 32)).sum()
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="a second time") as e:
        loss.backward()
    assert "\n" not in str(e.value)


def test_each_device_thread_has_its_cores_as_intra_op_threads_and_the_callers_torch_keeps_its_own(host_cluster):
    import threading
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        placed = devplace.torch.place_module(make_towers(), (torch.randn(8, 32),), str(host_cluster),
                                             pin_modules=TOWERS_SPLIT)
        assert placed.devplace_executor.intra_op_threads == {0: 1, 1: 1}  # one core each
        assert torch.get_num_threads() == 3
        seen = []
        fresh = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
        fresh.start()
        fresh.join()
        assert seen == [3]  # the default a new thread takes is the caller's again
    finally:
        torch.set_num_threads(before)


class FailsInBackward(torch.autograd.Function):
    armed = False

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, gradient):
        if FailsInBackward.armed:
            raise ValueError("backward refused on purpose")
        return gradient


class TowersFailingInB(TwoTowers):
    def forward(self, x):
        b = FailsInBackward.apply(self.tower_b(x))
        return self.head(torch.relu(torch.cat([self.tower_a(x), b], dim=1)))


def test_an_error_in_a_device_threads_backward_raises_in_the_caller_and_the_module_still_trains(host_cluster):
    torch.manual_seed(0)
    reference = TowersFailingInB()
    x = torch.randn(8, 32)
    placed = devplace.torch.place_module(copy.deepcopy(reference), (x,), str(host_cluster), pin_modules=TOWERS_SPLIT)
    assert placed.devplace_parallel is True
    FailsInBackward.armed = True
    try:
        with pytest.raises(ValueError, match="on purpose"):
            placed(x).sum().backward()
    finally:
        FailsInBackward.armed = False
    placed.zero_grad()
    assert_trains_alike(reference, placed, 2)


class TrainsOtherwise(TwoTowers):
    def forward(self, x):
        out = super().forward(x)
        return out if self.training else out.softmax(dim=1)  # a branch on the mode: Python, not a traced op


def test_a_placed_module_in_other_modes_than_traced_runs_its_forward_as_written(host_cluster):
    torch.manual_seed(0)
    reference = TrainsOtherwise()
    x = torch.randn(8, 32)
    placed = devplace.torch.place_module(copy.deepcopy(reference), (x,), str(host_cluster), pin_modules=TOWERS_SPLIT)
    assert placed.devplace_parallel is True
    with torch.no_grad():
        torch.testing.assert_close(placed(x), reference(x))
        assert sorted(placed.devplace_executor.last_threads) == [0, 1]  # traced in train mode: in parallel
        placed.eval(), reference.eval()
        torch.testing.assert_close(placed(x), reference(x))  # the eval branch, not the traced one
        assert placed.devplace_executor.last_threads == {}
    placed.train(), reference.train()
    assert_trains_alike(reference, placed, 2)


class StopsGradients(TwoTowers):
    def forward(self, x):
        with torch.no_grad():
            fixed = self.tower_b(x)  # no gradient for tower b
        return self.head(torch.relu(torch.cat([self.tower_a(x), fixed], dim=1)))


def test_a_forward_switching_autograd_off_inside_runs_as_written(host_cluster):
    torch.manual_seed(0)
    reference = StopsGradients()
    x, y = torch.randn(8, 32), torch.randint(0, 10, (8,))
    placed = devplace.torch.place_module(copy.deepcopy(reference), (x,), str(host_cluster), target=y,
                                         pin_modules=TOWERS_SPLIT)
    assert placed.devplace_parallel.endswith("switches autograd on or off (torch.no_grad() inside it), "
                                             "which torch.fx does not record")
    placed(x).sum().backward()
    assert all(p.grad is None for p in placed.tower_b.parameters())


class DropsOut(TwoTowers):
    def __init__(self):
        super().__init__()
        self.drop_a = torch.nn.Dropout(0.5)
        self.drop_b = torch.nn.Dropout(0.3)

    def forward(self, x):
        a = self.drop_a(self.tower_a(x))
        b = torch.nn.functional.dropout(self.tower_b(x), 0.2, training=True)
        return self.head(torch.relu(torch.cat([a, self.drop_b(b)], dim=1)))


def test_dropout_in_a_parallel_split_draws_the_masks_of_the_unplaced_module(host_cluster):
    torch.manual_seed(0)
    reference = DropsOut()
    x, y = torch.randn(8, 32), torch.randint(0, 10, (8,))
    placed = devplace.torch.place_module(copy.deepcopy(reference), (x,), str(host_cluster), target=y,
                                         pin_modules={"tower_a": 0, "drop_a": 0, "tower_b": 1, "drop_b": 1,
                                                      "head": 0})
    assert placed.devplace_parallel is True
    stages = placed.devplace_executor.stages
    assert {s.device for s in stages} == {0, 1}
    # the three dropouts, each a stage waiting for the one before it in the forward
    random = [s for s in stages if any("drop" in n.name for n in s.nodes)]
    assert [[n.name for n in s.nodes] for s in random] == [["drop_a"], ["dropout"], ["drop_b"]]
    assert [s.device for s in random] == [0, 1, 1]
    assert random[0].index in random[1].producers and random[1].index in random[2].producers
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (reference, placed)]
    for step in range(4):
        results = []
        for model, optimizer in zip((reference, placed), optimizers):
            torch.manual_seed(100 + step)  # the same draws for both
            optimizer.zero_grad()
            out = model(x)
            torch.nn.functional.cross_entropy(out, y).backward()
            results.append((out.detach(), [p.grad.clone() for p in model.parameters()]))
            optimizer.step()
        torch.testing.assert_close(results[0][0], results[1][0])
        for a, b in zip(results[0][1], results[1][1]):
            torch.testing.assert_close(a, b)
