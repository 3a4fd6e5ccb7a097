"""How many CPU threads torch trains a job with: `--threads N` when given, else one.

One thread is the default because it is the count a shared machine cannot catch out. A timing
probe (the rule before this one) chose among 1, 2, 4, ... threads per run, and what it chose
depended on the moment: on a 2-core VM it picked 2 threads for FEMNIST's CNN when it caught the
machine idle and 1 under load, and the same run took 28 s or 266 s, because 2 threads take 3.09x
the time of 1 once other work shares the cores (benchmarks/README.md, "Thread count"). One thread
per job never oversubscribes a core; a machine the run has to itself can say so with `--threads N`.
GPU jobs keep torch's own count. The count and what chose it go into the job's summary.json
("threads"), and `plan --budget` times the jobs at the same count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchmark.lazy import torch  # imported when a job trains: a run with nothing to do never does
from benchmark.run.protocols import Protocol, claiming

if TYPE_CHECKING:
    from benchmark.engine.simulation import JobRounds

DEFAULT = {"count": 1, "chosen_by": "default (one thread per job; --threads N for more)"}
_requested: dict = {}  # {"count": N, "chosen_by": "--threads"} once a command line or Ray task fixed it


def request(count: int | None, chosen_by: str = "--threads") -> None:
    """Fix the thread count for every job of this process (None: the default)."""
    _requested.clear()
    if count is not None:  # set when a job or batch starts (`settle`, `for_protocol`), where torch is imported
        _requested.update(count=count, chosen_by=chosen_by)


def cpu_choice() -> dict:
    """The count a CPU job of this process trains with, and what chose it: {"count", "chosen_by"}."""
    return dict(_requested or DEFAULT)


def settle(sim: JobRounds) -> dict:
    """Set torch's thread count for `sim`'s job; returns what to record: {"count", "chosen_by"}."""
    setup = sim.setup
    if setup is None:  # a replay: its batch was computed at the count its protocol chose (and set then)
        return protocol_choice(claiming(sim.job)[0])
    if setup.device.type != "cpu" and not _requested:
        return {"count": torch.get_num_threads(), "chosen_by": "torch default (GPU job)"}
    chosen = cpu_choice()
    torch.set_num_threads(chosen["count"])
    return chosen


def protocol_choice(protocol: Protocol) -> dict:
    """The count a protocol's batches are computed at (--threads wins), and what chose it."""
    return dict(_requested) if _requested else dict(protocol.threads)


def for_protocol(protocol: Protocol) -> dict:
    """Set the thread count of a protocol's batches (--threads wins); returns what to record."""
    chosen = protocol_choice(protocol)
    protocol.use_threads(chosen["count"])
    return chosen
