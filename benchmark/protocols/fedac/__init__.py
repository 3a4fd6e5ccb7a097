"""The FedAc protocol (Yuan & Ma): binary logistic regression on a shared split, every worker every
round, an lr grid per (M, K) cell computed as one batch by a compiled engine (engine.py, kernel.py;
jobs.py says which jobs and how they batch), replayed job by job (replay.py), and reported as the
paper's figure with the authors' released runs beside it (report.py, compare.py).

Importing this package registers both parts; the engine (numpy, numba: no torch) and the report's plotting
are imported only when a batch is computed or a report drawn, so `fedbench plan` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchmark.protocols.fedac import suite_parts  # noqa: F401  (registers its reference part and init)
from benchmark.protocols.fedac.jobs import batch_key
from benchmark.protocols.fedac.report import is_fedac_protocol, section
from benchmark.report.protocol_sections import SECTIONS, ProtocolSection, Section
from benchmark.run.protocols import PROTOCOLS, BatchCosts, Protocol

if TYPE_CHECKING:
    from benchmark.job.config import JobConfig
    from benchmark.protocols.fedac.replay import ReplaySimulation
    from benchmark.suite.expand import Job
    from benchmark.suite.schema import Suite


class FedAcProtocol(Protocol):
    name = "fedac"
    # a one-thread numba kernel plus a few numpy products per round, which a second thread only slows
    # down (benchmarks/README.md, "Measurements behind code comments")
    threads = {"count": 1, "chosen_by": "batched engine (one thread)"}

    def use_threads(self, count: int) -> None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(count, user_api="blas")  # numpy's products; the numba kernel is one thread anyway

    def batch_key(self, job: JobConfig) -> str | None:
        return batch_key(job)

    def run_batch(self, jobs: list[Job]) -> list[ReplaySimulation]:
        from benchmark.protocols.fedac.replay import replays

        return replays(jobs)

    def batch_costs(self, batches: list[list[Job]], time_limit_s: float) -> BatchCosts:
        from benchmark.protocols.fedac.cost import batch_costs

        return batch_costs(self, batches, time_limit_s)


class FedAcSection(ProtocolSection):
    name = "fedac"
    figure_name = "fedac_figure.png"
    figure_caption = (
        "FedAc protocol: best final F(w) − F* over η after T = K·R steps against the number of workers M, "
        "a panel per K (log-log); line: fedbench (mean over seeds), shaded: the range of each seed's best over η, "
        "hollow markers: the authors' released runs (one run each), "
        "× on a panel's top edge: every η diverged or failed"
    )

    def claims(self, job: Job) -> bool:
        return is_fedac_protocol(job)

    def build(self, suite: Suite, jobs: list[Job], summaries: dict[str, dict]) -> Section:
        return section(suite, jobs, summaries)


PROTOCOLS.register(FedAcProtocol())
SECTIONS.register(FedAcSection())
