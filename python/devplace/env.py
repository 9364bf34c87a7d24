"""devplace.PlacementEnv: placing a graph's units on a cluster's devices as
a Gymnasium-style environment (its documented API, without needing
Gymnasium): reset(seed=...) -> (obs, info); step(action) -> (obs, reward,
terminated, truncated, info).

Units are the co-location groups the learned placers place (a few per
layer, not every op). Two modes:
- "one_shot": an action is a whole placement, a device index per unit
  (MultiDiscrete); the episode ends after one step.
- "sequential": an action is one unit's device (Discrete), in the units'
  topological order, as Park's and Placeto's environments; the reward comes
  with the last unit, 0 before.

The reward is minus the step time in seconds. A placement that does not run
(out of memory, or a unit on a device kind that cannot run it) is scored as
the learning core scores it: minus the failing step time (twice the all-on-
CPU step time unless failing_runtime_s says), times (1 + the share of its
memory that does not fit)^2 where failures are graded (failing_signal), the
square of the trainers' sqrt-time cost so that the reward stays in seconds.
"""

import numpy as np

from . import spaces
from ._devplace import Cluster, Error, Graph, Simulator, _UnitEnvironment

MODES = ("one_shot", "sequential")


def _read_only(array):
    array.setflags(write=False)
    return array


class PlacementEnv:
    metadata = {"render_modes": []}
    render_mode = None
    reward_range = (-float("inf"), 0.0)
    spec = None

    def __init__(self, graph="tiny", cluster="k80x2", mode="one_shot", failing_signal="graded",
                 failing_runtime_s=0.0, op_times=None, workers=1):
        if mode not in MODES:
            raise Error(f"mode must be one_shot or sequential, got {str(mode)[:40]!r}")
        graph = graph if isinstance(graph, Graph) else Graph(graph)
        cluster = cluster if isinstance(cluster, Cluster) else Cluster(cluster)
        self.mode = mode
        self.simulator = Simulator(graph, cluster, op_times=op_times, workers=workers)
        self._core = _UnitEnvironment(self.simulator, failing_signal, float(failing_runtime_s))
        core = self._core
        self.num_units = core.num_units
        self.num_devices = core.num_devices
        self.unit_names = core.unit_names
        self.device_names = cluster.device_names
        self.failing_runtime_s = core.failing_runtime_s
        units, devices = self.num_units, self.num_devices
        self._static = {
            "unit_type": _read_only(core.unit_type),
            "unit_shape": _read_only(core.unit_shape),
            "unit_stats": _read_only(core.unit_stats),
            "allowed": _read_only(core.allowed),
            "edges": _read_only(core.edges),
            "edge_bytes": _read_only(core.edge_bytes),
            "devices": _read_only(core.device_features),
        }
        edges = self._static["edges"].shape[0]
        inf = np.inf
        self.observation_space = spaces.Dict({
            "unit_type": spaces.Box(0, max(len(core.type_names) - 1, 0), (units,), np.int32),
            "unit_shape": spaces.Box(-inf, inf, (units, self._static["unit_shape"].shape[1]), np.float32),
            "unit_stats": spaces.Box(0, inf, (units, 3), np.float32),
            "allowed": spaces.Box(0, 1, (units, devices), np.int8),
            "edges": spaces.Box(0, max(units - 1, 0), (edges, 2), np.int32),
            "edge_bytes": spaces.Box(0, inf, (edges,), np.float64),
            "devices": spaces.Box(-inf, inf, (devices, 4), np.float32),
            "placement": spaces.Box(-1, devices - 1, (units,), np.int32),
            "current_unit": spaces.Box(0, units, (), np.int32),
        })
        if mode == "one_shot":
            self.action_space = spaces.MultiDiscrete(np.full(units, devices))
        else:
            self.action_space = spaces.Discrete(devices)
        self._np_random = np.random.default_rng()
        self._placement = None
        self._cursor = 0
        self._done = True
        self._started = False

    # --- Gymnasium's API --------------------------------------------------

    @property
    def np_random(self):
        return self._np_random

    @property
    def unwrapped(self):
        return self

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self._np_random = np.random.default_rng(seed)
            self.action_space.seed(seed)
            self.observation_space.seed(seed)
        self._placement = np.full(self.num_units, -1, dtype=np.int32)
        self._cursor = 0
        self._done = False
        self._started = True
        info = {"num_units": self.num_units, "num_devices": self.num_devices,
                "failing_runtime_s": self.failing_runtime_s}
        return self._observation(), info

    def step(self, action):
        if not self._started:
            raise Error("step() before reset(): call reset() first")
        if self._done:
            raise Error("step() after the episode ended: call reset() first")
        if self.mode == "one_shot":
            # Checked (shape, integer dtype, each device in range) in C++.
            score = self._core.score(action, "action")
            self._placement = np.asarray(action).astype(np.int32)
            self._cursor = self.num_units
            return self._finish(score)
        self._placement[self._cursor] = self._device_of(action)
        self._cursor += 1
        if self._cursor < self.num_units:
            return self._observation(), 0.0, False, False, {}
        return self._finish(self._core.score(self._placement, "placement"))

    def render(self):
        return None

    def close(self):
        pass

    # --- beyond Gymnasium's API -------------------------------------------

    def op_placement(self, unit_devices):
        """The device of each op (graph order) of a device per unit: what
        devplace.simulate() and `devplace simulate` take."""
        return self._core.placement(unit_devices)

    def score_batch(self, unit_placements):
        """Scores an integer array [n, units] of whole placements at once (over
        the simulator's workers) without touching the episode: a dict of
        arrays (reward, ok, oom, step_time_s, memory_overflow, learning_cost)."""
        return self._core.score_batch(unit_placements)

    # --- inside -----------------------------------------------------------

    def _device_of(self, action):
        if isinstance(action, np.ndarray) and action.shape in ((), (1,)):
            action = action.reshape(())[()]
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise Error(f"action: a {type(action).__name__}; a sequential step takes one device index (an integer)")
        if not 0 <= int(action) < self.num_devices:
            raise Error(f"action: device {int(action)} is out of range: the cluster has devices 0..{self.num_devices - 1}")
        return int(action)

    def _finish(self, score):
        self._done = True
        info = {k: score[k] for k in ("ok", "oom", "step_time_s", "memory_overflow", "learning_cost")}
        return self._observation(), float(score["reward"]), True, False, info

    def _observation(self):
        observation = dict(self._static)
        observation["placement"] = self._placement.copy()
        observation["current_unit"] = np.array(self._cursor, dtype=np.int32)
        return observation
