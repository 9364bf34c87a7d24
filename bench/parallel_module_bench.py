"""A placed module run in parallel (BENCHMARKS.md, "From Python"): a model
of two heavy parallel towers merged by a head, placed on this machine's
executor CPU devices (`devplace clusters --detect --cpu-devices 2`, each
its own cores) with pin_modules putting each tower on a device of its own,
timed as

- unplaced: the model as written, with torch's default intra-op threads
  and with one per core of the process;
- placed, sequential: place_module(..., parallel=False), one op after the
  other on the calling thread;
- placed, parallel: place_module's PlacedExecutor, each device's part of
  forward and backward on a thread of its own pinned to its cores (and
  unpinned: pin_threads=False);

and, as the ceiling of what threads get on this machine at the time, the
two towers' forwards run by two plain Python threads against one.

Per round each variant runs --steps forwards (no_grad) and --steps
training steps (zero_grad, forward, cross entropy, backward, SGD), the
variants alternating within the round; the medians over rounds are
reported, and each round's parallel / sequential ratio.

    cmake --build build --target _devplace devplace
    PYTHONPATH=build/python /usr/bin/python3 bench/parallel_module_bench.py --rounds 5
"""
import argparse
import copy
import os
import statistics
import tempfile
import threading
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--features", type=int, default=512)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--method", default="m_etf", help="places what the split leaves (the loss, the input)")
    options = parser.parse_args()

    torch.manual_seed(0)
    reference = TwoTowers(options.features, options.width, options.depth)
    x = torch.randn(options.batch, options.features)
    y = torch.randint(0, 10, (options.batch,))
    with tempfile.TemporaryDirectory() as folder:
        cluster = devplace.detect_cluster(cpu_devices=2, gpus=False, path=os.path.join(folder, "host.json"))
    print(f"cluster: {cluster.device_names}, cores {[d['cores'] for d in cluster.devices]}; "
          f"torch intra-op threads (unplaced): {torch.get_num_threads()}")
    split = {"tower_a": "cpu:0", "tower_b": "cpu:1", "head": "cpu:0"}
    cores = len(os.sched_getaffinity(0))
    intra_op = {f"unplaced, {cores} intra-op threads": cores}  # the other variants: torch's default
    variants = {"unplaced": copy.deepcopy(reference), f"unplaced, {cores} intra-op threads": copy.deepcopy(reference)}
    for name, options_of_variant in (("placed sequential", {"parallel": False}),
                                     ("placed parallel", {}),
                                     ("placed parallel unpinned", {"pin_threads": False})):
        variants[name] = devplace.torch.place_module(copy.deepcopy(reference), (x,), cluster, target=y,
                                                     method=options.method, pin_modules=split, **options_of_variant)
    placed = variants["placed parallel"]
    print(f"towers split {split}: simulated step {placed.devplace_step_time_s * 1e3:.1f} ms; stages (device, "
          f"nodes): {[(s.device, len(s.nodes)) for s in placed.devplace_executor.stages]}")
    towers = (reference.tower_a, reference.tower_b)

    def towers_on_two_threads():
        threads = [threading.Thread(target=tower, args=(x,)) for tower in towers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    optimizers = {name: torch.optim.SGD(m.parameters(), lr=1e-3) for name, m in variants.items()}
    forward_s = {name: [] for name in variants}
    forward_cores = {name: [] for name in variants}
    train_s = {name: [] for name in variants}
    train_cores = {name: [] for name in variants}
    ceiling = {"one thread": [], "two threads": []}

    def timed(work):
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(options.steps):
            work()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return wall / options.steps, cpu / wall

    for _ in range(options.rounds):
        with torch.no_grad():
            ceiling["one thread"].append(timed(lambda: [tower(x) for tower in towers])[0])
            ceiling["two threads"].append(timed(towers_on_two_threads)[0])
        for name, model in variants.items():
            default_threads = torch.get_num_threads()
            torch.set_num_threads(intra_op.get(name, default_threads))
            with torch.no_grad():
                model(x)  # warm
                seconds, used = timed(lambda: model(x))
                forward_s[name].append(seconds)
                forward_cores[name].append(used)
            optimizer = optimizers[name]

            def step():
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()

            seconds, used = timed(step)
            torch.set_num_threads(default_threads)
            train_s[name].append(seconds)
            train_cores[name].append(used)
    median = statistics.median
    print(f"\n{'variant':<30} {'forward ms':>10} {'cores':>6} {'train step ms':>14} {'cores':>6}"
          f"  (medians of {options.rounds} rounds; cores: process CPU time / wall)")
    for name in variants:
        print(f"{name:<30} {median(forward_s[name]) * 1e3:>10.1f} {median(forward_cores[name]):>6.2f} "
              f"{median(train_s[name]) * 1e3:>14.1f} {median(train_cores[name]):>6.2f}")
    print(f"the two towers' forwards, plain torch: one thread {median(ceiling['one thread']) * 1e3:.1f} ms, "
          f"two threads {median(ceiling['two threads']) * 1e3:.1f} ms")
    for label, times in (("forward", forward_s), ("train step", train_s)):
        for other in ("placed sequential", "unplaced"):
            ratios = [p / s for p, s in zip(times["placed parallel"], times[other])]
            print(f"{label}: placed parallel / {other} per round: {', '.join(f'{r:.2f}' for r in ratios)}")
    print(f"load average: {', '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
