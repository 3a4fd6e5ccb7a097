"""A round tells a listener how far its training has come (the progress lines of a long round): after
each client when sequential, each chunk of clients when vectorised, both in `auto`'s probe; listening
changes no number."""

from __future__ import annotations

import pytest
import torch
from vec_support import make_jobs

from benchmark.data.participation import sample_clients
from benchmark.engine.setup import build_simulation

COUNTS = {  # clients done after each report of a 4-client round
    ("sequential", None): [1, 2, 3, 4],
    ("vectorised", 3): [3, 4],  # chunks of vmap_chunk clients
    ("auto", None): [1, 2, 4],  # the first round's probe: PROBE_CLIENTS one by one, then the rest at once
}


@pytest.mark.parametrize("execution, vmap_chunk", list(COUNTS))
def test_each_round_reports_its_clients_and_local_steps(execution, vmap_chunk):
    (job,) = make_jobs(["fedavg"])  # 4 of 10 clients a round, 3 rounds, equal splits (vectorisable)
    config = job.config.model_copy(update={"execution": execution, "vmap_chunk": vmap_chunk})
    heard = []
    listened = build_simulation(config)
    records = listened.run(on_clients=heard.append)
    assert sorted({d.round for d in heard}) == [1, 2, 3]
    for r in (1, 2, 3):
        reports = [d for d in heard if d.round == r]
        chosen = sample_clients(config.seed, r - 1, config.num_clients, config.participation)
        steps = sum(len(p) for p in listened.setup.batch_positions(chosen, r - 1))
        assert all(d.total == len(chosen) == 4 for d in reports)
        assert reports[-1].done == 4 and reports[-1].batches == steps > 0
        assert [d.seconds for d in reports] == sorted(d.seconds for d in reports)
        if r == 1 or execution != "auto":  # auto's later rounds: whichever trainer its probe chose
            assert [d.done for d in reports] == COUNTS[execution, vmap_chunk]
    if execution != "auto":  # (auto's choice rests on timings, which differ between two runs)
        silent = build_simulation(config)
        assert silent.run() == records
        assert torch.equal(silent.progress.theta, listened.progress.theta)
