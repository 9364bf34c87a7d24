"""A placed module run in parallel (BENCHMARKS.md, "From Python"): a model
of two heavy parallel towers merged by a head, placed on this machine's
executor CPU devices (`devplace clusters --detect --cpu-devices 2`, each
its own cores) so that each tower is on a device of its own, timed as

- unplaced: the model as written, torch's own intra-op threads (torch's
  default, and every core of the process);
- placed, sequential: place_module(..., parallel=False), one op after the
  other on the calling thread;
- placed, parallel: place_module's PlacedExecutor, each device's part of
  forward and backward on a thread of its own pinned to its cores.

Per round each variant runs --steps forwards (no_grad) and --steps
training steps (zero_grad, forward, cross entropy, backward, SGD), the
variants alternating within the round; the medians over rounds are
reported, and each round's parallel / sequential ratio.

    cmake --build build --target _devplace devplace
    PYTHONPATH=build/python /usr/bin/python3 bench/parallel_module_bench.py
"""
import argparse
import copy
import os
import statistics
import tempfile
import time

import torch

import devplace
import devplace.torch


class TwoTowers(torch.nn.Module):
    def __init__(self, features, width, depth, classes=10):
        super().__init__()

        def tower():
            layers = []
            for k in range(depth):
                layers += [torch.nn.Linear(features if k == 0 else width, width), torch.nn.ReLU()]
            return torch.nn.Sequential(*layers)

        self.tower_a = tower()
        self.tower_b = tower()
        self.head = torch.nn.Linear(2 * width, classes)

    def forward(self, x):
        return self.head(torch.cat([self.tower_a(x), self.tower_b(x)], dim=1))


def towers_split(model):
    """The devices of tower_a's and of tower_b's nodes, as the executor runs them."""
    devices = {"tower_a": set(), "tower_b": set()}
    for stage in model.devplace_executor.stages:
        for n in stage.nodes:
            for tower in devices:
                if n.name.startswith(tower):
                    devices[tower].add(stage.device)
    return devices


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--features", type=int, default=512)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--method", default="mcmc")
    parser.add_argument("--max-evaluations", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()

    torch.manual_seed(0)
    reference = TwoTowers(options.features, options.width, options.depth)
    x = torch.randn(options.batch, options.features)
    y = torch.randint(0, 10, (options.batch,))
    with tempfile.TemporaryDirectory() as folder:
        cluster = devplace.detect_cluster(cpu_devices=2, gpus=False, path=os.path.join(folder, "host.json"))
    print(f"cluster: {cluster.device_names}, cores {[d['cores'] for d in cluster.devices]}; "
          f"torch intra-op threads (unplaced): {torch.get_num_threads()}")
    placements = {}
    for parallel in (False, True):
        model = devplace.torch.place_module(copy.deepcopy(reference), (x,), cluster, target=y, method=options.method,
                                            max_evaluations=options.max_evaluations, seed=options.seed,
                                            parallel=parallel)
        placements[parallel] = model
    parallel_model = placements[True]
    split = towers_split(parallel_model)
    print(f"method {options.method}: simulated step {parallel_model.devplace_step_time_s * 1e3:.1f} ms, "
          f"{len(parallel_model.devplace_executor.stages)} stages, tower devices {split}")
    if len(split["tower_a"] | split["tower_b"]) < 2:
        print("the placement does not split the towers: nothing to run in parallel")

    variants = {"unplaced": copy.deepcopy(reference), "placed sequential": placements[False],
                "placed parallel": parallel_model}
    optimizers = {name: torch.optim.SGD(m.parameters(), lr=1e-3) for name, m in variants.items()}
    forward_s = {name: [] for name in variants}
    train_s = {name: [] for name in variants}
    for _ in range(options.rounds):
        for name, model in variants.items():
            with torch.no_grad():
                model(x)  # warm
                start = time.perf_counter()
                for _ in range(options.steps):
                    model(x)
                forward_s[name].append((time.perf_counter() - start) / options.steps)
            optimizer = optimizers[name]
            start = time.perf_counter()
            for _ in range(options.steps):
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
            train_s[name].append((time.perf_counter() - start) / options.steps)
    print(f"\n{'variant':<20} {'forward ms':>11} {'train step ms':>14}  (medians of {options.rounds} rounds)")
    for name in variants:
        print(f"{name:<20} {statistics.median(forward_s[name]) * 1e3:>11.1f} "
              f"{statistics.median(train_s[name]) * 1e3:>14.1f}")
    for label, times in (("forward", forward_s), ("train step", train_s)):
        ratios = [p / s for p, s in zip(times["placed parallel"], times["placed sequential"])]
        unplaced = [p / u for p, u in zip(times["placed parallel"], times["unplaced"])]
        print(f"{label}: parallel/sequential per round {', '.join(f'{r:.2f}' for r in ratios)}; "
              f"parallel/unplaced {', '.join(f'{r:.2f}' for r in unplaced)}")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
