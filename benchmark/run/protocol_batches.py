"""A suite's jobs that protocols (run/protocols.py) claim, wired into the ordinary job runner: the
first time one job of a batch is due, the whole batch is computed, and each of its jobs is then
written by `run_job` through its replay, so its results folder, summary and MLflow run are exactly
those of a job run on its own.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from benchmark.run.protocols import PROTOCOLS, claiming
from benchmark.run.threads import for_protocol
from benchmark.suite.expand import Job

if TYPE_CHECKING:
    from benchmark.engine.simulation import JobRounds


class ProtocolBatches:
    """A suite's jobs that protocols claim, each batch computed once, when its first job is due."""

    def __init__(self, jobs: list[Job]):
        self.batch_of: dict[str, tuple[str, str]] = {}  # job id -> (protocol, batch key)
        self.batches: dict[tuple[str, str], list[Job]] = defaultdict(list)
        for job in jobs:
            if claimed := claiming(job.config):
                protocol, key = claimed
                self.batch_of[job.id] = (protocol.name, key)
                self.batches[protocol.name, key].append(job)
        self.replays: dict[str, JobRounds] = {}
        self.failed: dict[tuple[str, str], str] = {}  # batch -> why computing it failed

    def covers(self, job: Job) -> bool:
        """Whether `job` is computed as part of a batch (and replayed from it)."""
        return job.id in self.batch_of

    def simulation_for(self, job: Job) -> JobRounds | None:
        """`job`'s replay (its batch computed first if it was not yet); None: not claimed. A batch
        that fails fails each of its jobs with its error, computed once; an interrupted one (Ctrl-C,
        SIGTERM) is computed afresh when a job of it is next due."""
        batch = self.batch_of.get(job.id)
        if batch is None:
            return None
        if batch in self.failed:
            raise BatchFailed(f"its batch of {len(self.batches[batch])} jobs failed: {self.failed[batch]}")
        if job.id not in self.replays:
            group = self.batches[batch]
            protocol = PROTOCOLS.get(batch[0])
            for_protocol(protocol)
            try:
                replays = protocol.run_batch(group)
            except Exception as err:
                self.failed[batch] = f"{type(err).__name__}: {err}"
                raise
            self.replays.update(zip((j.id for j in group), replays))
        return self.replays.pop(job.id)


class BatchFailed(RuntimeError):
    """A job whose batch failed when an earlier job of it was due."""
