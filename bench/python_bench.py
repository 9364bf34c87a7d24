"""devplace from Python against its C++ (BENCHMARKS.md, "From Python"):

1. PlacementEnv.step (one-shot) on a synthetic 10,000-op graph against the
   simulator's own run of the same placements (Simulator.run_batch with one
   worker: the C++ loop, no Python per placement);
2. Simulator.run_batch over every core against the C++ batch API
   (SimulatedEnvironment::Measure, build/bench/batch_bench) on the same
   placements, their step times checked equal;
3. a torchvision ResNet-18 and a small transformer through
   devplace.torch.place_module: trace, place, train N steps, each timed.

Each comparison alternates its two sides for --rounds rounds and reports
the ratio of each round: on a shared machine the ratio of one round is
steadier than either side's time.

    bash scripts/build.sh   # or: cmake --build build --target _devplace batch_bench
    PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import tempfile
import time

import numpy as np

import devplace

ROOT = pathlib.Path(__file__).resolve().parents[1]

parser = argparse.ArgumentParser()
parser.add_argument("--ops", type=int, default=10000)
parser.add_argument("--width", type=int, default=8)
parser.add_argument("--hidden", type=int, default=256, help="the synthetic graph's --hidden: small enough that "
                    "random placements fit k80x4's memory (one out of memory ends its simulation early in the "
                    "C++ batch API, not in run_batch)")
parser.add_argument("--cluster", default="k80x4")
parser.add_argument("--steps", type=int, default=40, help="env.step calls per round")
parser.add_argument("--rows", type=int, default=64, help="placements per batch")
parser.add_argument("--repeat", type=int, default=3, help="batches per round")
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--workers", type=int, default=0, help="batch threads (0: one per core)")
parser.add_argument("--train-steps", type=int, default=10)
parser.add_argument("--no-torch", action="store_true", help="skip the place_module rows")
parser.add_argument("--batch-bench", default=str(ROOT / "build" / "bench" / "batch_bench"))
args = parser.parse_args()
workers = args.workers or os.cpu_count()


def random_unit_placements(env, count, seed):
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    units = np.array([[rng.choice(np.flatnonzero(row)) for row in obs["allowed"]] for _ in range(count)], np.int32)
    return units, np.stack([env.op_placement(u) for u in units]).astype(np.int32)


graph = devplace.Graph("synthetic", ops=args.ops, width=args.width, hidden=args.hidden)
cluster = devplace.Cluster(args.cluster)
env = devplace.PlacementEnv(graph, cluster, mode="one_shot")
print(f"graph: synthetic, {graph.num_ops} ops, width {args.width}, hidden {args.hidden}; cluster {args.cluster}; "
      f"{env.num_units} units; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")

# 1. env.step against the simulator's own run of the same placements (new
# ones each round: the env remembers what it scored).
own = devplace.Simulator(graph, cluster, workers=1)
ratios = []
for r in range(args.rounds):
    units, placements = random_unit_placements(env, args.steps, seed=1 + r)
    step_s = 0.0
    for u in units:
        env.reset()
        start = time.perf_counter()
        env.step(u)
        step_s += time.perf_counter() - start
    start = time.perf_counter()
    times = own.run_batch(placements)
    run_s = time.perf_counter() - start
    ratios.append(step_s / run_s)
    print(f"round {r + 1}: env.step {1e3 * step_s / len(units):.3f} ms, simulator's own run "
          f"{1e3 * run_s / len(units):.3f} ms per placement: env.step / run = {ratios[-1]:.3f}")
print(f"env.step / simulator run: median {statistics.median(ratios):.3f} (target <= 1.10)")

# 2. run_batch over every core against the C++ batch API.
_, batch = random_unit_placements(env, args.rows, seed=100)
python_side = devplace.Simulator(graph, cluster, workers=workers)
reference = python_side.run_batch(batch)
ratios = []
with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "placements.i32")
    np.ascontiguousarray(batch, np.int32).tofile(path)
    command = [args.batch_bench, str(args.ops), str(args.width), str(args.hidden), args.cluster, path, str(args.rows), str(workers),
               str(args.repeat)]
    for r in range(args.rounds):
        start = time.perf_counter()
        for _ in range(args.repeat):
            python_side.run_batch(batch)
        python_eps = args.rows * args.repeat / (time.perf_counter() - start)
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        cpp = json.loads(out)
        ratios.append(python_eps / cpp["evaluations_per_s"])
        print(f"round {r + 1}: run_batch {python_eps:.1f} evaluations/s, C++ batch API "
              f"{cpp['evaluations_per_s']:.1f}/s ({workers} threads): Python / C++ = {ratios[-1]:.3f}")
    same = cpp["sum_step_time_s"] == sum(0.0 if np.isnan(t) else t for t in reference.tolist())  # in the C++ order
    print(f"run_batch / C++ batch API evaluations a second: median {statistics.median(ratios):.3f} "
          f"(target >= 0.90); step times equal: {same}")

if args.no_torch:
    raise SystemExit(0)

# 3. place_module end to end.
import torch  # noqa: E402
import devplace.torch  # noqa: E402


class Classifier(torch.nn.Module):
    def __init__(self, width=64, layers=2, classes=10):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=2 * width, dropout=0.0,
                                                 batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(width, classes)

    def forward(self, tokens):
        return self.head(self.encoder(tokens).mean(dim=1))


def models():
    """(name, a function making the model, an input batch)."""
    try:
        import torchvision
        yield ("ResNet-18, 2x3x64x64", lambda: torchvision.models.resnet18(num_classes=10),
               torch.randn(2, 3, 64, 64))
    except ImportError:
        print("ResNet-18: torchvision is not installed")
    yield "transformer, 2 layers, width 64, 4x16 tokens", Classifier, torch.randn(4, 16, 64)


for name, make_model, x in models():
    y = torch.randint(0, 10, (x.shape[0],))
    for method in ("m_etf", "mcmc"):
        torch.manual_seed(0)
        placed = devplace.torch.place_module(make_model(), (x,), args.cluster, target=y, method=method,
                                             max_evaluations=500 if method == "mcmc" else 0)
        optimizer = torch.optim.SGD(placed.parameters(), lr=0.01)
        start = time.perf_counter()
        for _ in range(args.train_steps):
            optimizer.zero_grad()
            out = placed(x)
            torch.nn.functional.cross_entropy(out, y.to(out.device)).backward()
            optimizer.step()
        train_s = time.perf_counter() - start
        s = placed.devplace_seconds
        print(f"{name}, {placed.devplace_graph.num_ops} ops, {method}: trace {s['trace']:.2f} s, place "
              f"{s['place']:.2f} s, train {args.train_steps} steps {train_s:.2f} s "
              f"(total {s['trace'] + s['place'] + train_s:.2f} s)")
