"""Small stand-ins for Gymnasium's spaces (Box, Discrete, MultiDiscrete,
Dict), following its documented API: shape, dtype, seed(), sample(),
contains() (and `x in space`), without needing Gymnasium."""

import numpy as np


class Space:
    def __init__(self, shape, dtype, seed=None):
        self.shape = None if shape is None else tuple(shape)
        self.dtype = None if dtype is None else np.dtype(dtype)
        self._np_random = np.random.default_rng(seed)

    @property
    def np_random(self):
        return self._np_random

    def seed(self, seed=None):
        self._np_random = np.random.default_rng(seed)
        return [seed]

    def __contains__(self, x):
        return self.contains(x)


class Box(Space):
    """Arrays of `shape` and `dtype` with low <= x <= high elementwise."""

    def __init__(self, low, high, shape, dtype, seed=None):
        super().__init__(shape, dtype, seed)
        self.low = np.broadcast_to(np.asarray(low, dtype=self.dtype), self.shape)
        self.high = np.broadcast_to(np.asarray(high, dtype=self.dtype), self.shape)

    def sample(self):
        if np.issubdtype(self.dtype, np.integer):
            return self.np_random.integers(self.low, self.high, size=self.shape, endpoint=True).astype(self.dtype)
        low = np.where(np.isfinite(self.low), self.low, -1.0)
        high = np.where(np.isfinite(self.high), self.high, low + 1.0)
        return self.np_random.uniform(low, high, size=self.shape).astype(self.dtype)

    def contains(self, x):
        if not isinstance(x, np.ndarray):
            return False
        return (x.shape == self.shape and np.can_cast(x.dtype, self.dtype) and
                bool(np.all(x >= self.low)) and bool(np.all(x <= self.high)))

    def __repr__(self):
        return f"Box({self.shape}, {self.dtype})"


class Discrete(Space):
    """The integers 0 .. n-1."""

    def __init__(self, n, seed=None):
        super().__init__((), np.int64, seed)
        self.n = int(n)

    def sample(self):
        return np.int64(self.np_random.integers(self.n))

    def contains(self, x):
        if isinstance(x, (bool, np.bool_)):
            return False
        if isinstance(x, (int, np.integer)):
            return 0 <= int(x) < self.n
        if isinstance(x, np.ndarray) and x.shape == () and np.issubdtype(x.dtype, np.integer):
            return 0 <= int(x) < self.n
        return False

    def __repr__(self):
        return f"Discrete({self.n})"


class MultiDiscrete(Space):
    """Integer arrays with 0 <= x[i] < nvec[i]."""

    def __init__(self, nvec, dtype=np.int64, seed=None):
        self.nvec = np.asarray(nvec, dtype=np.int64)
        super().__init__(self.nvec.shape, dtype, seed)

    def sample(self):
        return (self.np_random.random(self.nvec.shape) * self.nvec).astype(self.dtype)

    def contains(self, x):
        if isinstance(x, (list, tuple)):
            x = np.asarray(x)
        if not isinstance(x, np.ndarray) or x.shape != self.shape or not np.issubdtype(x.dtype, np.integer):
            return False
        return bool(np.all(x >= 0)) and bool(np.all(x < self.nvec))

    def __repr__(self):
        return f"MultiDiscrete({self.nvec.tolist() if self.nvec.size <= 8 else self.nvec.shape})"


class Dict(Space):
    """A dict of named spaces; an observation is a dict with exactly those keys."""

    def __init__(self, spaces, seed=None):
        super().__init__(None, None, seed)
        self.spaces = dict(spaces)

    def seed(self, seed=None):
        seeds = np.random.SeedSequence(seed).spawn(len(self.spaces))
        for space, s in zip(self.spaces.values(), seeds):
            space.seed(int(s.generate_state(1)[0]))
        return [seed]

    def sample(self):
        return {name: space.sample() for name, space in self.spaces.items()}

    def contains(self, x):
        return (isinstance(x, dict) and x.keys() == self.spaces.keys() and
                all(space.contains(x[name]) for name, space in self.spaces.items()))

    def __getitem__(self, name):
        return self.spaces[name]

    def __repr__(self):
        return "Dict(" + ", ".join(f"{k}: {v}" for k, v in self.spaces.items()) + ")"
