"""`fedbench plan --budget`: what a suite will cost before it runs.

Client-steps and samples per job are exact: the splits are loaded as the run loads them, every round's
participants are drawn as the run draws them, and each participant's steps follow the batch plan of
engine/fed_data.py (E·⌈n/b⌉ steps and E·n samples over E epochs, or K steps of b, with b = min(B, n)).
Time is estimated from a rate measured here: a few local steps of each distinct (dataset, model, batch
size, method) on this machine's device, at the thread count the run would choose, timed after a warm-up
round. On a shared, busy machine the rates are as noisy as the machine: the estimate is a planning figure.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

import torch
from rich.markup import escape
from rich.table import Table

from benchmark.data.participation import sample_clients
from benchmark.engine.setup import build_simulation, federated_data
from benchmark.run.threads import settle
from benchmark.suite.expand import Job

STEPS_PER_ROUND = 2  # local steps of each timed round
TIMED_ROUNDS = (3, 9)  # at least 3 timed rounds, more (up to 9) while under TIME_LIMIT_S: a busy machine's spikes
TIME_LIMIT_S = 1.0  # fall out of the median


@dataclass(frozen=True)
class Budget:
    client_steps: int
    samples: int
    seconds_per_step: float | None = None

    @property
    def seconds(self) -> float | None:
        return None if self.seconds_per_step is None else self.client_steps * self.seconds_per_step


def client_cost(n: int, local) -> tuple[int, int]:
    """(steps, samples) of one client holding n examples in one round."""
    b = min(local.batch_size, n)
    if local.epochs is not None:
        return local.epochs * math.ceil(n / b), local.epochs * n
    return local.steps, local.steps * b


def job_cost(job: Job) -> tuple[int, int]:
    """(client-steps, samples) of the whole job, from its split and its participation draws."""
    c = job.config
    sizes = [len(idx) for idx in federated_data(c).clients]
    per_client = [client_cost(n, c.local) for n in sizes]
    steps = samples = 0
    for t in range(c.rounds):
        for i in sample_clients(c.seed, t, len(sizes), c.participation):
            steps += per_client[i][0]
            samples += per_client[i][1]
    return steps, samples


def rate_key(job: Job) -> tuple:
    c = job.config
    return (c.dataset.name, c.model.name, c.local.batch_size, job.method_label, c.execution, c.precision)


def seconds_per_step(job: Job, device: str) -> float:
    """Median seconds of one local step of `job` on `device` (rounds of one client taking STEPS_PER_ROUND steps
    of the job's batch size; a round's fixed cost is shared by its steps, as in the job)."""
    c = job.config
    local = c.local.model_copy(update={"steps": STEPS_PER_ROUND, "epochs": None})
    one_client = c.participation.model_copy(update={"rate": 1 / c.num_clients, "mode": "fixed", "pool": None})
    sim = build_simulation(c.model_copy(update={"local": local, "participation": one_client}), device)
    settle(sim)  # the thread count the run would train it with
    sync = torch.cuda.synchronize if sim.setup.device.type == "cuda" else (lambda: None)
    sim.run_round(0)  # warm-up: allocator, kernels, thread pools
    times: list[float] = []
    while len(times) < TIMED_ROUNDS[0] or (len(times) < TIMED_ROUNDS[1] and sum(times) < TIME_LIMIT_S):
        sync()
        start = time.perf_counter()
        sim.run_round(len(times) + 1)
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times) / STEPS_PER_ROUND


def budgets(jobs: list[Job], device: str | None) -> dict[str, Budget]:
    """Job id -> its budget; with a device, timed at rates measured there (one measurement per rate_key)."""
    rates: dict[tuple, float] = {}
    out = {}
    for job in jobs:
        steps, samples = job_cost(job)
        rate = None
        if device is not None:
            key = rate_key(job)
            if key not in rates:
                rates[key] = seconds_per_step(job, device)
            rate = rates[key]
        out[job.id] = Budget(steps, samples, rate)
    return out


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def budget_table(suite_name: str, jobs: list[Job], device: str | None) -> Table:
    found = budgets(jobs, device)
    timed = f", times at rates measured on {device}" if device else ""
    table = Table(title=escape(f"{suite_name}: compute budget of {len(jobs)} jobs{timed}"))
    for col in ("id", "dataset", "method", "seed", "rounds", "client-steps", "samples", "ms/step", "est. training"):
        table.add_column(col, justify="right" if col not in ("id", "dataset", "method") else "left")
    for job in jobs:
        b = found[job.id]
        ms = "-" if b.seconds_per_step is None else f"{1e3 * b.seconds_per_step:.1f}"
        row = (job.id, escape(job.dataset_label), escape(job.method_label), str(job.config.seed))
        table.add_row(*row, str(job.config.rounds), f"{b.client_steps:,}", f"{b.samples:,}", ms, duration(b.seconds))
    total = [b.seconds for b in found.values()]
    table.add_section()
    table.add_row(
        "total",
        "",
        "",
        "",
        "",
        f"{sum(b.client_steps for b in found.values()):,}",
        f"{sum(b.samples for b in found.values()):,}",
        "",
        duration(sum(total)) if device else "-",
    )
    return table
