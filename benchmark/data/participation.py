"""Which clients take part in each round. The draw depends only on (seed, round, settings),
never on the method, so every method of a suite sees the same clients.

Dynamic pools (FedACG Table 3): every `every` rounds the candidate pool changes —
`resample` draws a fresh pool of `size` out of N; `replace` keeps a pool whose members are each
replaced, with probability `replace_prob`, by a client from outside the pool. Each round's
participants are drawn from the current pool. The pool of any round is recomputed from round 0
(one cheap draw per pool period), so resumed runs see exactly the same clients.
"""

from __future__ import annotations

import math

import numpy as np

from benchmark.rng import Stream, numpy_rng


def clients_per_round(rate: float, num_clients: int) -> int:
    """M = max(1, round(p·N)), rounding halves up (Python's round() would send 2.5 to 2)."""
    return max(1, math.floor(rate * num_clients + 0.5))


def pool_members(seed: int, rnd: int, num_clients: int, pool) -> np.ndarray:
    """Sorted ids of the candidate pool in force at round `rnd`."""
    size = min(pool.size, num_clients)
    period = rnd // pool.every
    if pool.mode == "resample":
        return np.sort(numpy_rng(seed, Stream.POOL, period).choice(num_clients, size, replace=False))
    members = numpy_rng(seed, Stream.POOL, 0).choice(num_clients, size, replace=False)
    for p in range(1, period + 1):
        rng = numpy_rng(seed, Stream.POOL, p)
        leaving = rng.random(size) < pool.replace_prob
        outside = np.setdiff1d(np.arange(num_clients), members)
        # only as many replacements as there are outsiders; the rest stay
        leaving[np.flatnonzero(leaving)[len(outside) :]] = False
        members = members.copy()
        members[leaving] = rng.choice(outside, int(leaving.sum()), replace=False)
    return np.sort(members)


def pool_entrants(seed: int, rnd: int, num_clients: int, pool) -> list[int]:
    """Clients that join the pool at round `rnd` (they start from empty state: docs/algorithms.md)."""
    if rnd == 0 or rnd % pool.every:
        return []
    previous = pool_members(seed, rnd - 1, num_clients, pool)
    return [int(c) for c in np.setdiff1d(pool_members(seed, rnd, num_clients, pool), previous)]


def sample_clients(seed: int, rnd: int, num_clients: int, cfg) -> list[int]:
    """Sorted client ids participating in round `rnd` (docs/algorithms.md, "Client participation").

    Fixed mode: M = round(rate·N), or round(rate·C) with `relative_to: pool` (FedACG's dynamic
    client set: 4% of the 250-client pool = 10 per round).
    """
    rng = numpy_rng(seed, Stream.SAMPLING, rnd)
    candidates = pool_members(seed, rnd, num_clients, cfg.pool) if cfg.pool else np.arange(num_clients)
    if cfg.mode == "fixed":
        base = len(candidates) if cfg.relative_to == "pool" else num_clients
        count = min(clients_per_round(cfg.rate, base), len(candidates))
        chosen = rng.choice(candidates, count, replace=False)
    elif cfg.mode == "bernoulli":
        chosen = np.array([], dtype=int)
        while len(chosen) == 0:  # resample if nobody is active
            chosen = candidates[rng.random(len(candidates)) < cfg.rate]
    else:
        raise ValueError(f"unknown participation mode {cfg.mode!r}")
    return sorted(int(c) for c in chosen)
