"""A batch of the FedAc protocol's jobs (one `batch_key`: an lr grid) computed at once by the batched
engine (engine.py), and each job's share replayed through the ordinary job runner
(run/protocol_batches.py) as a `ReplaySimulation`, so its results folder, summary and MLflow run
are exactly those of a job run by the per-client loop.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from benchmark.engine.convex import BinaryArrays
from benchmark.engine.round_tally import OnClients
from benchmark.engine.rounds import Diverged, ExecutionRecord, Progress, RoundDone
from benchmark.protocols.fedac.engine import ENGINE, PER_DATASET, Outcome, run_batch
from benchmark.suite.expand import Job


class ReplaySimulation:
    """One job's share of a batched FedAc computation (its precomputed Outcome), replayed through
    run_job as the job's rounds (engine/simulation.JobRounds)."""

    setup = None  # nothing is trained here
    client_accuracy = None  # its datasets (a9a, synthetic shared) are not grouped by user

    def __init__(self, job: Job, outcome: Outcome):
        from benchmark.engine.sources import data_fingerprint

        self.job, self.outcome = job.config, outcome
        self.progress = Progress()
        self.data_fingerprint = data_fingerprint(job.config)
        # its own FedAc kernel: neither trainer nor local step of engine/trainers/
        self.execution = ExecutionRecord(chosen=ENGINE)

    def state_dict(self) -> dict:
        return {"round": self.progress.round, "engine": ENGINE}

    def misfit(self, state) -> str | None:
        if not isinstance(state, dict) or state.get("engine") != ENGINE or not isinstance(state.get("round"), int):
            return f"expected a checkpoint of the {ENGINE} engine: its round"
        return None

    def load_state_dict(self, state: dict) -> None:
        self.progress.round = state["round"]  # records up to here are on disk already

    def rounds(
        self,
        stop_after: int | None = None,
        on_clients: OnClients | None = None,  # no client trains here: the batch computed the rounds
    ) -> Iterator[RoundDone]:
        if self.outcome.error is not None:
            raise self.outcome.error
        start = self.progress.round
        last = self.job.rounds if stop_after is None else min(self.job.rounds, stop_after)
        diverged = self.outcome.diverged_round
        if diverged is not None and diverged <= last:
            last = diverged - 1  # as the per-client loop, which stops at the first non-finite round
        records = {r["round"]: r for r in self.outcome.records if start < r["round"] <= last}
        self.progress = self.progress_at(start)  # (a checkpoint keeps the round only)
        for r in range(start + 1, last + 1):
            self.progress = self.progress_at(r)
            yield RoundDone(r, records.get(r))
        if diverged is not None and diverged == last + 1:
            raise Diverged(diverged, "parameters")

    def progress_at(self, r: int) -> Progress:
        return Progress(r, bytes_down=r * self.outcome.round_bytes, bytes_up=r * self.outcome.round_bytes)

    def final_state_dict(self) -> dict:
        return {"fc.weight": self.outcome.final.reshape(1, -1).copy()}  # written as a tensor (torch_format.py)


def replays(jobs: list[Job]) -> list[ReplaySimulation]:
    """Compute the batch `jobs` (one batch_key) at once; each job's replay, in their order."""
    return [ReplaySimulation(job, outcome) for job, outcome in zip(jobs, run_group([j.config for j in jobs]))]


def run_group(configs, row_order=None) -> list[Outcome]:
    from benchmark.engine.sources import data_fingerprint, load_arrays

    first = configs[0]
    src = load_arrays(first)
    objective = None
    if first.suboptimality:  # F* is solved (or read) once per dataset and λ, keyed by the loaded data's fingerprint
        lam = first.local.weight_decay
        x, y = np.asarray(src.train_x), np.asarray(src.train_y)
        objective = PER_DATASET.get(
            first, ("objective", lam), lambda: BinaryArrays.of(x, y, lam, data_key=data_fingerprint(first))
        )
    started = time.monotonic()
    outcomes = run_batch(configs, src.train_x, src.train_y, src.test_x, src.test_y, objective, row_order)
    # one computation for every job: its seconds shared evenly over the jobs and their rounds
    per_round = (time.monotonic() - started) / len(configs) / first.rounds
    for outcome in outcomes:
        for rec in outcome.records:
            rec["wall_s"] = round(per_round * rec["round"], 3)
    return outcomes
