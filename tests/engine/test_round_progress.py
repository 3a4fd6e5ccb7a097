"""A round tells a listener how far its training has come (the progress lines of a long round): after
each client when sequential, each chunk of clients when vectorised, both in `auto`'s probe, and within
a client or chunk at most every STEP_REPORT_S; its local steps add up; listening changes no number."""

from __future__ import annotations

import pytest
import torch
from vec_support import make_jobs

from benchmark.data.participation import sample_clients
from benchmark.engine import round_tally
from benchmark.engine.setup import build_simulation
from benchmark.engine.simulation import Simulation

COUNTS = {  # clients done after each client report of a 4-client round
    ("sequential", None): [1, 2, 3, 4],
    ("vectorised", 3): [3, 4],  # chunks of vmap_chunk clients
    # the first round's probe: PROBE_CLIENTS one by one, then the vectorised rest, whose first client trains
    # alone to measure the memory a client takes (the chunk unset), then the others at once
    ("auto", None): [1, 2, 3, 4],
}


def rounds_heard(config) -> tuple[list, list[dict], Simulation]:
    heard = []
    sim = build_simulation(config)
    records = sim.run(on_clients=heard.append)
    return heard, records, sim


@pytest.mark.parametrize("execution, vmap_chunk", list(COUNTS))
def test_each_round_reports_its_clients_and_local_steps(execution, vmap_chunk):
    (job,) = make_jobs(["fedavg"])  # 4 of 10 clients a round, 3 rounds, equal splits (vectorisable)
    config = job.config.model_copy(update={"execution": execution, "vmap_chunk": vmap_chunk})
    heard, records, listened = rounds_heard(config)
    assert sorted({d.round for d in heard}) == [1, 2, 3]
    for r in (1, 2, 3):
        reports = [d for d in heard if d.round == r]
        chosen = sample_clients(config.seed, r - 1, config.num_clients, config.participation)
        steps = sum(len(p) for p in listened.setup.batch_positions(chosen, r - 1))
        assert all(d.total == len(chosen) == 4 for d in reports)
        assert reports[-1].done == 4 and reports[-1].steps == steps > 0
        assert [d.seconds for d in reports] == sorted(d.seconds for d in reports)
        assert [d.steps for d in reports] == sorted(d.steps for d in reports)
        if r == 1 or execution != "auto":  # auto's later rounds: whichever trainer its probe chose
            done = [d.done for i, d in enumerate(reports) if i == 0 or d.done != reports[i - 1].done]
            assert done == COUNTS[execution, vmap_chunk]
    if execution != "auto":  # (auto's choice rests on timings, which differ between two runs)
        silent = build_simulation(config)
        assert silent.run() == records
        assert torch.equal(silent.progress.theta, listened.progress.theta)


@pytest.mark.parametrize("execution", ["sequential", "vectorised"])
def test_a_long_client_reports_its_steps_as_it_goes(monkeypatch, execution):
    monkeypatch.setattr(round_tally, "STEP_REPORT_S", 0.0)  # every step is due
    (job,) = make_jobs(["fedavg"], rounds=1)
    whole_round = 4 if execution == "vectorised" else None  # one chunk (unset: its first client alone, measured)
    heard, _, _ = rounds_heard(job.config.model_copy(update={"execution": execution, "vmap_chunk": whole_round}))
    first = heard[: next(i for i, d in enumerate(heard) if d.done) + 1]  # up to the first client (or chunk) done
    per_step = 1 if execution == "sequential" else 4  # the vectorised trainer steps the whole chunk together
    assert [d.steps for d in first] == [per_step * k for k in range(1, len(first))] + [first[-2].steps]
    assert [d.done for d in first[:-1]] == [0] * (len(first) - 1) and first[-1].done == per_step
