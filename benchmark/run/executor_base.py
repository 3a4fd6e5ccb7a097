"""What an executor is: it runs a suite's jobs somewhere and returns their summaries.

An executor is a subclass of `Executor` in a module of benchmark.run that registers itself with
`@EXECUTORS.register`; `fedbench run --executor NAME` finds it by its `name` (the registry
imports the module benchmark/builtin_names.py lists for it, or every module of benchmark.run). run/executor.py holds `local`
(this process), run/ray_executor.py `ray` (Ray tasks, one machine or a cluster).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from benchmark.errors import UserError
from benchmark.registry import Registry
from benchmark.run.protocols import claiming
from benchmark.run.staging import DEFAULT_SHIP_MAX_MB
from benchmark.store.layout import Store
from benchmark.suite.expand import Job


@dataclass(frozen=True)
class ClusterOptions:
    """`fedbench run`'s flags for executors that spread the jobs over a cluster."""

    address: str | None = None  # cluster to join; None: start a local one
    gpus_per_job: float = 0.0
    cpus_per_job: float = 1.0
    data_uris: tuple[str, ...] = ()  # [NAME=]URI: where nodes without a dataset fetch it
    ship_max_mb: float = DEFAULT_SHIP_MAX_MB  # largest dataset the driver ships to nodes that lack it

    def given(self) -> bool:
        return bool(self.address or self.gpus_per_job or self.data_uris)


GPU_DRIVER_FILES = ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/kfd", "/dev/dxg")


def torch_device(name: str) -> str:
    """The torch device to train on here; a name this machine cannot use is a user error, not N failed jobs."""
    if name == "auto" and not any(Path(p).exists() for p in GPU_DRIVER_FILES):
        return "cpu"  # no GPU driver, so no CUDA (or ROCm) device: known without importing torch (1 s)
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(name)
    except RuntimeError:
        raise UserError(f"--device {name!r} is not a device; use cpu, cuda, cuda:N or auto") from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0 or (device.index or 0) >= count:
            raise UserError(f"--device {name}: {count} CUDA device(s) here; use --device cpu or auto")
    elif device.type != "cpu":
        raise UserError(f"--device {name}: only cpu and cuda devices are supported")
    return name


class Executor(ABC):
    """Runs jobs; the defaults suit an executor that trains on this machine."""

    name: ClassVar[str]
    uses_cluster_options: ClassVar[bool] = False  # False: ClusterOptions given to it are an error
    # `run --keep-stale`: a done job whose code changed since is reused, marked stale (run/stale.py)
    keep_stale: bool = False

    def __init__(self, options: ClusterOptions | None = None):
        self.options = options or ClusterOptions()
        if self.options.given() and not self.uses_cluster_options:
            cluster = " or ".join(n for n in EXECUTORS.names() if EXECUTORS.get(n).uses_cluster_options)
            raise UserError(f"--ray-address, --gpus-per-job and --data-uri need --executor {cluster}")

    # whether its jobs that protocols claim are computed as the protocols' batches (on the CPU, by
    # engines that may not import torch: the FedAc protocol's), rather than job by job
    runs_protocol_batches: ClassVar[bool] = False

    def device(self, requested: str, jobs: list[Job] = ()) -> str:
        """The device `jobs` train on, from --device (cpu, cuda, cuda:N, auto). `auto` for jobs that
        protocols' batches compute is the CPU they run on, found without importing torch."""
        if requested == "auto" and jobs and self.runs_protocol_batches and all(claiming(j.config) for j in jobs):
            return "cpu"
        return torch_device(requested)

    def check(self, jobs: list[Job]) -> None:
        """Before the first job starts: load and check every dataset the jobs need and split it
        as each job will (num_clients above the users, a split that cannot be drawn), so a missing
        or broken one is one error now, not a failure after hours of other jobs."""
        if not jobs:  # a run whose jobs are all done imports no engine (and no torch)
            return
        from benchmark.engine.sources import data_fingerprint
        from benchmark.run.data_memo import DataMemo

        splits, memo = set(), DataMemo()
        for job in jobs:  # cached per dataset and per split: each is loaded and drawn once
            memo.remember(job.config, data_fingerprint(job.config))  # for the next run's triage (run/triage.py)
            c = job.config
            if self.runs_protocol_batches and claiming(c):  # a shared split: nothing to draw (and no torch)
                continue
            from benchmark.engine.setup import federated_data

            split = (
                c.dataset.name,
                repr(c.dataset.params),
                c.dataset.root,
                c.dataset.split.model_dump_json(),
                c.num_clients,
            )
            if split not in splits:
                splits.add(split)
                federated_data(c)

    @abstractmethod
    def run(
        self, jobs: list[Job], suite: str, store: Store, device: str, tracker, progress, stop_after: int | None
    ) -> dict[str, dict]:
        """Run every unfinished job; job id -> summary (finished, diverged, skipped, stopped or failed)."""


EXECUTORS: Registry[type[Executor]] = Registry("executor", "benchmark.run")
