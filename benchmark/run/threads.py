"""How many CPU threads torch trains a job with: `--threads N` when given, else a short probe.

torch's default (one thread per core) can be many times slower than one thread on a busy
machine, and the best count depends on the model and the machine, so it is measured: a few
forward-backward steps of the job's model on one of its batches at 1, 2, 4, ... threads (up to
the cores this process may use); more threads must be 10 % faster to be chosen (they cost the
jobs beside it). A model whose one-thread step is shorter than SHORT_STEP keeps one thread untried:
its step is per-operation overhead, which threads don't shorten, and a probe that catches an idle
moment can pick a count that is much slower once a shared machine is busy again. One probe per
model, input and batch size per process. The count and what chose it go into the job's
summary.json ("threads"). Measurements: benchmarks/README.md, "Measurements behind code comments".
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

from benchmark.lazy import F, torch  # imported when a job trains: a run with nothing to do never does
from benchmark.run.protocols import Protocol, claiming

if TYPE_CHECKING:
    from benchmark.engine.simulation import JobRounds
    from benchmark.engine.training_setup import TrainingSetup
    from benchmark.suite.schema import JobConfig

GAIN = 0.9  # a larger count must take at most this fraction of the best smaller count's time
SHORT_STEP = 0.01  # seconds: a forward-backward step this short stays at one thread
_requested: dict = {}  # {"count": N, "chosen_by": "--threads"} once a command line or Ray task fixed it
_probed: dict[str, int] = {}


def request(count: int | None, chosen_by: str = "--threads") -> None:
    """Fix the thread count for every job of this process (None: probe per job)."""
    _requested.clear()
    if count is not None:  # set when a job or batch starts (`settle`, `for_protocol`), where torch is imported
        _requested.update(count=count, chosen_by=chosen_by)


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def candidates(cores: int) -> list[int]:
    out, n = [], 1
    while n < cores:
        out.append(n)
        n *= 2
    return out + [cores]


def settle(sim: JobRounds) -> dict:
    """Set torch's thread count for `sim`'s job; returns what to record: {"count", "chosen_by"}."""
    if _requested:
        torch.set_num_threads(_requested["count"])
        return dict(_requested)
    setup = sim.setup
    if setup is None:  # a replay: its batch was computed at the count its protocol chose
        return for_protocol(claiming(sim.job)[0])
    if setup.device.type != "cpu":
        return {"count": torch.get_num_threads(), "chosen_by": "torch default (GPU job)"}
    key = _probe_key(sim.job, setup)
    if key not in _probed:
        _probed[key] = probe(setup, sim.progress.theta)
    torch.set_num_threads(_probed[key])
    return {"count": _probed[key], "chosen_by": "probe"}


def for_protocol(protocol: Protocol) -> dict:
    """Set torch's thread count for a protocol's batches (--threads wins); returns what to record."""
    chosen = dict(_requested) if _requested else dict(protocol.threads)
    torch.set_num_threads(chosen["count"])
    return chosen


def _probe_key(job: JobConfig, setup: TrainingSetup) -> str:
    return json.dumps(
        [
            job.model.model_dump(mode="json"),
            list(setup.data.src.train_x.shape[1:]),
            job.local.batch_size,
            job.precision,
        ],
        sort_keys=True,
    )


def probe(setup: TrainingSetup, theta: torch.Tensor) -> int:
    """The fastest thread count for a forward-backward step of the model at `theta` on its largest
    client's first batch."""
    batch = setup.client_batches(0, int(setup.sizes.argmax()))[0]
    w = theta.detach().clone().requires_grad_(True)

    def step() -> float:
        t0 = time.perf_counter()
        torch.autograd.grad(F.cross_entropy(setup.forward(w, batch.x), batch.y), w)
        return time.perf_counter() - t0

    best, best_time = 1, float("inf")
    for n in candidates(usable_cores()):
        torch.set_num_threads(n)
        warm = step()  # warm-up (allocator, oneDNN primitives)
        took = min(step() for _ in range(3 if warm < 0.5 else 1))  # a large model on CPU: one step says enough
        if took < GAIN * best_time:
            best, best_time = n, took
        if n == 1 and took < SHORT_STEP:
            break
    return best
