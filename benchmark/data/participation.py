"""Which clients take part in each round. The draw depends only on (seed, round, settings),
never on the method, so every method of a suite sees the same clients."""

from __future__ import annotations

import numpy as np

from benchmark.engine.rng import Stream, numpy_rng


def clients_per_round(rate: float, num_clients: int) -> int:
    return max(1, int(round(rate * num_clients)))


def sample_clients(seed: int, rnd: int, num_clients: int, cfg) -> list[int]:
    """Sorted client ids participating in round `rnd` (ALGORITHMS.md, Client participation)."""
    rng = numpy_rng(seed, Stream.SAMPLING, rnd)
    if cfg.mode == "fixed":
        chosen = rng.choice(num_clients, clients_per_round(cfg.rate, num_clients), replace=False)
    elif cfg.mode == "bernoulli":
        chosen = np.array([], dtype=int)
        while len(chosen) == 0:  # resample if nobody is active
            chosen = np.flatnonzero(rng.random(num_clients) < cfg.rate)
    else:
        raise ValueError(f"unknown participation mode {cfg.mode!r}")
    return sorted(int(c) for c in chosen)
