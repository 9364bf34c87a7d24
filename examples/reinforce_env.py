"""REINFORCE against devplace.PlacementEnv, in numpy: a softmax over devices
per unit, a moving-average baseline, one-shot episodes.

    PYTHONPATH=build/python /usr/bin/python3 examples/reinforce_env.py --episodes 300
"""
import argparse

import numpy as np

import devplace

parser = argparse.ArgumentParser()
parser.add_argument("--graph", default="tiny")
parser.add_argument("--cluster", default="k80x2")
parser.add_argument("--episodes", type=int, default=300)
parser.add_argument("--seed", type=int, default=1)
args = parser.parse_args()

env = devplace.PlacementEnv(args.graph, args.cluster, mode="one_shot")
obs, _ = env.reset(seed=args.seed)
rng = np.random.default_rng(args.seed)
logits = np.where(obs["allowed"] > 0, 0.0, -np.inf)  # [units, devices]; devices a unit cannot use never sampled
baseline, best = None, -np.inf
for episode in range(args.episodes):
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    action = np.array([rng.choice(env.num_devices, p=p) for p in probs])
    obs, reward, terminated, truncated, info = env.step(action)
    best = max(best, reward)
    baseline = reward if baseline is None else 0.9 * baseline + 0.1 * reward
    advantage = (reward - baseline) / max(abs(baseline), 1e-12)  # relative, so the rate suits any graph
    grad = -probs  # d log p(action) / d logits
    grad[np.arange(env.num_units), action] += 1.0
    logits = np.where(np.isfinite(logits), logits + 0.5 * advantage * grad, -np.inf)
    obs, _ = env.reset()
    if episode % max(1, args.episodes // 10) == 0 or episode == args.episodes - 1:
        print(f"episode {episode:4d}  step time {-reward:.6f} s  best {-best:.6f} s  ok {info['ok']}")
assert np.isfinite(best) and best < 0
