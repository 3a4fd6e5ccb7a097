"""Independent, reproducible random streams derived from (seed, purpose, round, client).

Every random choice in a simulation draws from a stream keyed by what it is for, so client
sampling, batching and augmentation are identical for every method and every execution mode
(sequential, vectorised, resumed), and adding a method cannot shift another's randomness.
"""

from __future__ import annotations

import enum

import numpy as np

from benchmark.lazy import torch


class Stream(enum.IntEnum):
    SPLIT = 1
    SAMPLING = 2
    POOL = 3
    BATCHES = 4
    AUGMENT = 5
    CODEC = 6
    INIT = 7
    HOLDOUT = 9  # (8 was DATA, never drawn and removed: values are part of every derived seed)
    PARTS = 10  # a method part's own draws (RoundInfo.rng, ClientContext.rng), built-in or plugin


def derive_seed(seed: int, stream: Stream, *keys: int) -> int:
    """A 63-bit seed that depends only on the arguments (stable across runs and platforms)."""
    # keys may be negative (e.g. -1 = the server): map them into [0, 2^64)
    entropy = [int(k) % (1 << 64) for k in (seed, stream, *keys)]
    state = np.random.SeedSequence(entropy).generate_state(2)
    return int((int(state[0]) << 31) ^ int(state[1])) & ((1 << 63) - 1)


def generator(seed: int, stream: Stream, *keys: int, device: str | torch.device = "cpu") -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(derive_seed(seed, stream, *keys))
    return g


def numpy_rng(seed: int, stream: Stream, *keys: int) -> np.random.Generator:
    return np.random.default_rng(derive_seed(seed, stream, *keys))
