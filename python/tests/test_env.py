"""PlacementEnv against Gymnasium's documented contract: seeded resets
reproducible, the spaces contain every observation and action sampled,
terminated episodes refuse step(); and its rewards as the learning core
scores placements."""

import numpy as np
import pytest

import devplace


def assert_same_observation(a, b):
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].dtype == b[key].dtype and np.array_equal(a[key], b[key]), key


@pytest.mark.parametrize("mode", ["one_shot", "sequential"])
def test_conformance(mode):
    env = devplace.PlacementEnv("tiny", "k80x2", mode=mode)
    obs, info = env.reset(seed=11)
    assert isinstance(info, dict)
    assert env.observation_space.contains(obs)
    again, _ = env.reset(seed=11)
    assert_same_observation(obs, again)

    env.action_space.seed(4)
    first = [env.action_space.sample() for _ in range(5)]
    env.action_space.seed(4)
    assert all(np.array_equal(x, y) for x, y in zip(first, [env.action_space.sample() for _ in range(5)]))
    assert all(env.action_space.contains(a) for a in first)

    steps, terminated, rewards = 0, False, []
    while not terminated:
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        steps += 1
        assert env.observation_space.contains(obs)
        assert isinstance(reward, float) and not truncated
        rewards.append(reward)
    assert steps == (1 if mode == "one_shot" else env.num_units)
    assert all(r == 0.0 for r in rewards[:-1]) and rewards[-1] < 0
    assert {"ok", "oom", "step_time_s"} <= info.keys()
    with pytest.raises(devplace.Error, match="reset"):
        env.step(env.action_space.sample())
    # A seeded reset after an episode starts the same episode again.
    obs, _ = env.reset(seed=11)
    assert_same_observation(obs, again)


def test_step_before_reset_is_refused():
    env = devplace.PlacementEnv("tiny", "k80x2")
    with pytest.raises(devplace.Error, match="reset"):
        env.step(np.zeros(env.num_units, dtype=np.int64))


def test_one_shot_reward_is_minus_the_simulated_step_time():
    graph, cluster = devplace.Graph("tiny"), devplace.Cluster("k80x2")
    env = devplace.PlacementEnv(graph, cluster)
    obs, _ = env.reset(seed=0)
    units = np.array([np.flatnonzero(row)[-1] for row in obs["allowed"]])  # the last device each may use
    _, reward, terminated, _, info = env.step(units)
    assert terminated and info["ok"]
    assert reward == -devplace.simulate(graph, cluster, env.op_placement(units)).step_time_s
    assert info["learning_cost"] == pytest.approx(np.sqrt(info["step_time_s"]), rel=1e-12)


def test_sequential_ends_where_one_shot_does():
    one_shot = devplace.PlacementEnv("tiny", "k80x4")
    sequential = devplace.PlacementEnv("tiny", "k80x4", mode="sequential")
    obs, _ = one_shot.reset(seed=3)
    sequential.reset(seed=3)
    rng = np.random.default_rng(3)
    units = np.array([rng.choice(np.flatnonzero(row)) for row in obs["allowed"]])
    _, expected, _, _, _ = one_shot.step(units)
    for k, device in enumerate(units):
        obs, reward, terminated, _, _ = sequential.step(int(device))
        assert obs["placement"][k] == device and obs["current_unit"] == k + 1
    assert terminated and reward == expected


def test_out_of_memory_is_scored_as_the_learning_core_scores_it():
    # Every unit on one GPU of a large-batch graph: out of memory.
    graph = devplace.Graph("synthetic", ops=200, batch=65536)
    env = devplace.PlacementEnv(graph, "k80x2", failing_signal="graded")
    obs, _ = env.reset()
    gpu = env.device_names.index("gpu:0")
    units = np.array([gpu if row[gpu] else np.flatnonzero(row)[0] for row in obs["allowed"]])
    _, reward, _, _, info = env.step(units)
    assert info["oom"] and not info["ok"] and 0 < info["memory_overflow"] <= 1
    failing = np.sqrt(env.failing_runtime_s)
    assert info["learning_cost"] == pytest.approx(failing * (1 + info["memory_overflow"]), rel=1e-12)
    assert reward == pytest.approx(-info["learning_cost"] ** 2, rel=1e-12)
    # Flat: the failing signal alone.
    flat = devplace.PlacementEnv(graph, "k80x2", failing_signal="flat")
    flat.reset()
    _, flat_reward, _, _, flat_info = flat.step(units)
    assert flat_info["oom"] and flat_reward == pytest.approx(-flat.failing_runtime_s, rel=1e-12)
    assert flat.failing_runtime_s == pytest.approx(env.failing_runtime_s, rel=1e-12)
    assert reward < flat_reward


def test_score_batch_matches_steps():
    env = devplace.PlacementEnv("tiny", "k80x2", workers=2)
    env.action_space.seed(9)
    rows = np.stack([env.action_space.sample() for _ in range(6)])
    batch = env.score_batch(rows)
    for k, row in enumerate(rows):
        env.reset()
        _, reward, _, _, _ = env.step(row)
        assert reward == batch["reward"][k]
