"""Job protocols: a family of jobs that is computed together, as batches, instead of one job at a
time (benchmark/protocols/ holds them, one package each).

A protocol claims a job by giving it a batch key (jobs with equal keys are one batch), computes a
batch in one go, and hands back each job's rounds as a replay (engine/simulation.JobRounds) that
the ordinary job runner writes as it writes any job. It also states the torch thread count it
computes at. Protocols register themselves with `@PROTOCOLS.register`; the registry imports
benchmark.protocols when first read (they stand above run/ and report/, as plugins do).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from benchmark.registry import Registry

if TYPE_CHECKING:  # `fedbench report` tells a protocol's jobs apart without torch
    from benchmark.engine.simulation import JobRounds
    from benchmark.job.config import JobConfig
    from benchmark.suite.expand import Job


class Protocol(ABC):
    """How the jobs of one protocol are batched, computed and replayed."""

    name: ClassVar[str]
    threads: ClassVar[dict]  # {"count", "chosen_by"}: torch's thread count while a batch is computed

    @abstractmethod
    def batch_key(self, job: JobConfig) -> str | None:
        """Jobs with equal keys are computed as one batch; None: not a job of this protocol.
        Pure config logic: `fedbench report` calls it without the protocol's engine."""

    @abstractmethod
    def run_batch(self, jobs: list[Job]) -> list[JobRounds]:
        """Compute the batch `jobs` at once; each job's rounds, to replay, in their order."""

    def use_threads(self, count: int) -> None:
        """Compute the batches that follow with `count` CPU threads: torch's, unless the protocol's
        engine computes with another library."""
        import torch

        torch.set_num_threads(count)

    def batch_costs(self, batches: list[list[Job]], time_limit_s: float) -> BatchCosts | None:
        """What computing each batch will take on this machine (`plan --budget`), measured in about
        `time_limit_s`; None: this protocol cannot say (the budget then says so)."""
        return None


@dataclass
class BatchCosts:
    """A protocol's answer to `plan --budget`: CPU seconds per batch, in the order asked, what it costs
    once per process (data, solvers, compiled code), and how it measured them (one line each). CPU
    time does not swing with the load; the budget turns it into wall time by the load it finds."""

    seconds: list[float]
    startup_s: float
    assumed: list[str]


PROTOCOLS: Registry[Protocol] = Registry("protocol", "benchmark.protocols")


def claiming(job: JobConfig) -> tuple[Protocol, str] | None:
    """The protocol that claims `job`, and its batch key; None: the job runs on its own."""
    for name in PROTOCOLS.names():
        protocol = PROTOCOLS.get(name)
        if (key := protocol.batch_key(job)) is not None:
            return protocol, key
    return None
