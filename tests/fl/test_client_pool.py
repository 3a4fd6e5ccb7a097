"""Dynamic client pools: members only, same clients for every method, replace mode, resume."""

from __future__ import annotations

import numpy as np
import torch
from methods_support import make_sim

from benchmark.data.participation import pool_entrants, pool_members, sample_clients
from benchmark.engine.trainers.sequential import SequentialTrainer
from benchmark.job.settings import Participation

N = 500


def cfg(**pool) -> Participation:
    return Participation(rate=0.02, pool={"size": 250, "every": 100, **pool})


def test_participants_come_from_the_pool_and_pool_changes_every_period():
    c = cfg()
    for t in (0, 57, 99, 100, 250):
        members = set(pool_members(0, t, N, c.pool).tolist())
        chosen = sample_clients(0, t, N, c)
        assert len(members) == 250 and len(chosen) == 10 and set(chosen) <= members
    assert np.array_equal(pool_members(0, 0, N, c.pool), pool_members(0, 99, N, c.pool))
    assert not np.array_equal(pool_members(0, 99, N, c.pool), pool_members(0, 100, N, c.pool))


def test_replace_mode_changes_about_q_of_the_members():
    q = 0.3
    c = cfg(mode="replace", replace_prob=q)
    fractions = []
    for period in range(1, 21):
        before = set(pool_members(0, 100 * period - 1, N, c.pool).tolist())
        after = set(pool_members(0, 100 * period, N, c.pool).tolist())
        assert len(after) == 250
        fractions.append(len(before - after) / 250)
    assert abs(np.mean(fractions) - q) < 0.03  # 20 periods x 250 members: std ≈ 0.007


def test_pool_is_derivable_for_any_round():
    c = cfg(mode="replace", replace_prob=0.5, every=3)
    first = [sample_clients(7, t, 40, c) for t in range(12)]
    again = [sample_clients(7, t, 40, c) for t in reversed(range(12))][::-1]
    assert first == again


def test_two_methods_see_the_same_clients(monkeypatch):
    seen: dict[str, list] = {"fedavg": [], "scaffold": []}
    pool = {"size": 2, "every": 2}
    train = SequentialTrainer.train

    for method in seen:

        def spy(self, chosen, rnd, received, record, *tally, method=method):
            seen[method].append(list(chosen))
            return train(self, chosen, rnd, received, record, *tally)

        monkeypatch.setattr(SequentialTrainer, "train", spy)
        sim = make_sim(method, sizes=(3, 4, 3, 5, 4), rate=0.2, pool=pool)
        for t in range(6):
            sim.run_round(t)
    assert seen["fedavg"] == seen["scaffold"]
    assert len({c for r in seen["fedavg"] for c in r}) > 1


def test_clients_joining_the_pool_start_from_empty_state():
    """SCAFFOLD with a pool redrawn every round: a client that (re)joins the pool trains from empty
    state, while a client that stays in the pool keeps its c_i."""
    from fedtest import job_config, tiny_simulation

    pool = {"size": 3, "every": 1, "mode": "resample"}  # M = 3 = the pool: every member trains every round
    job = job_config(
        "scaffold",
        rounds=8,
        num_clients=6,
        participation={"rate": 0.5, "pool": pool},
        local={"steps": 1, "batch_size": 4, "lr": 0.1},
    )
    x = torch.randn(24, 3)
    y = torch.arange(24) % 3
    sim = tiny_simulation(job, x, y, [list(range(i * 4, i * 4 + 4)) for i in range(6)], 3)
    seen, get = [], sim.setup.clients.get
    sim.setup.clients.get = lambda cid, device: seen.append((t, cid, bool(get(cid, device)))) or get(cid, device)
    trained: set[int] = set()
    for t in range(8):
        sim.run_round(t)
        entrants = set(pool_entrants(job.seed, t, 6, job.participation.pool))
        for rnd, cid, had_state in (s for s in seen if s[0] == t):
            assert had_state == (cid in trained and cid not in entrants), (t, cid)
        trained |= {cid for rnd, cid, _ in seen if rnd == t}
    assert any(had for _, _, had in seen) and pool_entrants(job.seed, 0, 6, job.participation.pool) == []


def test_rate_relative_to_the_pool_draws_rate_times_pool_size():
    """FedACG's dynamic client set: 4% of the 250-client pool = 10 per round (not 4% of 500 = 20)."""
    c = Participation(rate=0.04, relative_to="pool", pool={"size": 250, "every": 100, "mode": "replace"})
    assert all(len(sample_clients(0, t, N, c)) == 10 for t in (0, 150, 999))
    assert len(sample_clients(0, 0, N, Participation(rate=0.04, pool={"size": 250}))) == 20


def test_relative_to_pool_needs_a_pool():
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="needs a pool"):
        Participation(rate=0.04, relative_to="pool")
