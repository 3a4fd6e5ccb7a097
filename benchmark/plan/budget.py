"""`fedbench plan --budget`: what a suite will cost before it runs, and what the estimate assumed.

Client-steps and samples per job are exact: the splits are loaded as the run loads them, every round's
participants are drawn as the run draws them, and each participant's steps follow the batch plan of
engine/fed_data.py (E·⌈n/b⌉ steps and E·n samples over E epochs, or K steps of b, with b = min(B, n)).

Time is measured here, at the thread count the run will use (run/threads.py), and added up as the run
spends it: its start-up (plan/budget_timing.py), each job run on its own (set-up, client-steps at the
rate of real rounds of the job, evaluations), and the batches a protocol computes together, which the
protocol times on its own engine (FedAc: protocols/fedac/cost.py). The machine's load is in the
measurements; the range is the same work at the fastest and slowest timed rounds, and at the quietest
and busiest load of the last 15 minutes. MLflow tracking is not counted (a run with `--no-tracking`).
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass

from rich.markup import escape
from rich.table import Table

from benchmark.data.participation import sample_clients
from benchmark.plan.budget_timing import Load, Rates, measure, startup_seconds
from benchmark.suite.expand import Job

PROTOCOL_TIME_LIMIT_S = 4.0  # a protocol's timing of its batch shapes; the rest are scaled (protocols/fedac/cost.py)
JOBS_TIME_LIMIT_S = 3.0  # timing job kinds; past it a kind takes the rates of one timed on its dataset and model


@dataclass(frozen=True)
class Budget:
    client_steps: int
    samples: int
    seconds: float | None = None  # its share of the run's time (a batch's, evenly), start-up not included
    ms_per_step: str = "-"


@dataclass
class Estimate:
    """A suite's budget: each job's, the run's total with its range, and what was assumed."""

    jobs: dict[str, Budget]
    seconds: float
    low: float
    high: float
    assumed: tuple[str, ...]


def client_cost(n: int, local) -> tuple[int, int]:
    """(steps, samples) of one client holding n examples in one round."""
    b = min(local.batch_size, n)
    if local.epochs is not None:
        return local.epochs * math.ceil(n / b), local.epochs * n
    return local.steps, local.steps * b


def per_client(c) -> list[tuple[int, int]]:
    from benchmark.engine.setup import federated_data

    return [client_cost(len(idx), c.local) for idx in federated_data(c).clients]


def everyone_every_round(c) -> bool:
    p = c.participation
    return p.mode == "fixed" and p.rate == 1.0 and p.pool is None


def round_cost(c, costs: list[tuple[int, int]], t: int) -> tuple[int, int]:
    """(client-steps, samples) of round t."""
    chosen = (
        costs if everyone_every_round(c) else [costs[i] for i in sample_clients(c.seed, t, len(costs), c.participation)]
    )
    return sum(s for s, _ in chosen), sum(n for _, n in chosen)


def job_cost(job: Job) -> tuple[int, int]:
    """(client-steps, samples) of the whole job, from its split and its participation draws."""
    c = job.config
    key = c.model_dump_json(exclude={"method": True, "local": {"lr"}})  # an lr grid is one cost
    if key not in _costs:
        costs = per_client(c)
        if everyone_every_round(c):  # every round the same
            steps, samples = round_cost(c, costs, 0)
            _costs[key] = steps * c.rounds, samples * c.rounds
        else:
            rounds = [round_cost(c, costs, t) for t in range(c.rounds)]
            _costs[key] = sum(s for s, _ in rounds), sum(n for _, n in rounds)
    return _costs[key]


_costs: dict[str, tuple[int, int]] = {}


@functools.lru_cache(maxsize=256)
def _evaluations(rounds: int, eval_every: int, metrics: tuple[str, ...]) -> int:
    from benchmark.metrics import evaluated_round

    return sum(evaluated_round(r, rounds, eval_every, list(metrics)) for r in range(1, rounds + 1))


def evaluations(c) -> int:
    return _evaluations(c.rounds, c.eval_every, tuple(c.metrics))


def rate_key(job: Job) -> tuple:
    c = job.config
    return (c.dataset.name, c.model.name, c.local.batch_size, job.method_label, c.execution, c.precision)


def estimate(jobs: list[Job], device: str) -> Estimate:
    """Every job's client-steps and samples, and the run's time on `device`."""
    from benchmark.run.protocol_batches import ProtocolBatches
    from benchmark.run.protocols import PROTOCOLS
    from benchmark.run.threads import cpu_choice, for_protocol

    load = Load.now()
    startup = startup_seconds()
    batched = ProtocolBatches(jobs)
    found: dict[str, Budget] = {}
    seconds = fast = slow = 0.0
    assumed = [f"device {device_name(device)}; {load}", f"run start-up (imports, suite): {startup:.1f} s"]
    for batch in batched.batches.values():  # rows without a time, until their protocol gives one
        found.update({j.id: Budget(*job_cost(j)) for j in batch})
    for name in {p for p, _ in batched.batches}:
        protocol = PROTOCOLS.get(name)
        groups = [b for (p, _), b in batched.batches.items() if p == name]
        threads = for_protocol(protocol)  # the count its batches are computed at
        costs = protocol.batch_costs(groups, PROTOCOL_TIME_LIMIT_S)
        if costs is None:
            assumed.append(f"protocol {name}: its batches' time is not known (not counted)")
            continue
        written = replay_seconds(protocol, groups[0][0], device)
        assumed += [
            f"protocol {name}: {threads['count']} thread(s), {threads['chosen_by']}",
            *costs.assumed,
            f"protocol {name}: the job runner writes each job's replay in {1e3 * written:.0f} ms",
        ]
        seconds += costs.startup_s + sum(costs.seconds) + written * sum(map(len, groups))
        for batch, took in zip(groups, costs.seconds):
            for j in batch:
                found[j.id] = Budget(*job_cost(j), seconds=took / len(batch) + written, ms_per_step="batched")
    fast, slow = seconds, seconds
    alone = [j for j in jobs if not batched.covers(j)]
    if alone:
        chosen = cpu_choice() if device == "cpu" else {"count": "torch's", "chosen_by": "GPU job"}
        assumed.append(f"jobs on their own: {chosen['count']} thread(s), {chosen['chosen_by']}")
    rates: dict[tuple, Rates] = {}
    timing_started = time.perf_counter()
    for job in alone:
        key = rate_key(job)
        if key not in rates:
            like = [k for k in rates if k[:3] == key[:3]]
            if like and time.perf_counter() - timing_started > JOBS_TIME_LIMIT_S:
                rates[key] = rates[like[0]]
                assumed.append(f"{' '.join(map(str, key[:4]))}: not timed (time limit), at {like[0][3]}'s rates")
            else:
                c, costs = job.config, per_client(job.config)
                rates[key] = measure(job, device, lambda t, c=c, costs=costs: round_cost(c, costs, t)[0])
                r = rates[key]
                assumed.append(
                    f"{' '.join(map(str, key[:4]))}: {1e3 * r.step_s:.2f} ms/step "
                    f"({1e3 * r.fastest_step_s:.2f}-{1e3 * r.slowest_step_s:.2f}), "
                    f"evaluation {1e3 * r.eval_s:.0f} ms, runner {1e3 * r.round_s:.1f} ms a round, set-up {r.setup_s:.1f} s"
                )
        r, (steps, samples), evals = rates[key], job_cost(job), evaluations(job.config)
        fixed = r.setup_s + evals * r.eval_s + job.config.rounds * r.round_s
        found[job.id] = Budget(steps, samples, fixed + steps * r.step_s, f"{1e3 * r.step_s:.2f}")
        seconds += fixed + steps * r.step_s
        fast += fixed + steps * r.fastest_step_s
        slow += fixed + steps * r.slowest_step_s
    quieter, busier = load.factors()
    assumed.append("MLflow tracking not counted (as `run --no-tracking`)")
    total = startup + seconds
    return Estimate(found, total, (startup + fast) * quieter, (startup + slow) * busier, tuple(assumed))


def replay_seconds(protocol, job: Job, device: str) -> float:
    """What the job runner takes to write one job of a protocol's batch from its replay (its files,
    summary and final model), timed on a one-round copy of `job` in a scratch folder."""
    import tempfile
    from dataclasses import replace
    from pathlib import Path

    from benchmark.run.job_runner import run_job
    from benchmark.store.job_dir import JobDir

    short = replace(job, config=job.config.model_copy(update={"rounds": 1, "eval_every": 1}))
    took = []
    with tempfile.TemporaryDirectory() as scratch:
        for attempt in range(3):  # the first pays once-per-process costs (imports, first save): the fastest counts
            (replay,) = protocol.run_batch([short])
            start = time.perf_counter()
            run_job(
                short,
                "budget",
                JobDir(Path(scratch) / str(attempt), job.id),
                device,
                simulation_for=lambda _, r=replay: r,
            )
            took.append(time.perf_counter() - start)
    return min(took)


def device_name(device: str) -> str:
    from benchmark.run.environment import environment

    return f"{device} ({environment(device)['device_name']})"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def total_line(found: Estimate) -> str:
    spread = f"{duration(found.low)} to {duration(found.high)}"
    return f"estimated run time: {duration(found.seconds)} ({spread}, by the spread of the timings and the load)"


def budget_table(suite_name: str, jobs: list[Job], device: str, every_job: bool = False) -> list:
    """What `plan --budget` prints: the table (a row per job, or per dataset and method past
    LISTED_UP_TO jobs), the run's total with its range, and what was assumed."""
    from benchmark.report.status import LISTED_UP_TO

    start = time.perf_counter()
    found = estimate(jobs, device)
    timed = f", timed on {device}"
    by_group = len(jobs) > LISTED_UP_TO and not every_job
    rows = (
        grouped(jobs, found)
        if by_group
        else [(j.id, j.dataset_label, j.method_label, str(j.config.seed), [j]) for j in jobs]
    )
    title = f"{suite_name}: compute budget of {len(jobs)} jobs{timed}" + (
        ", a row per dataset and method" if by_group else ""
    )
    table = Table(title=escape(title))
    for col in (
        "id" if not by_group else "jobs",
        "dataset",
        "method",
        "seed",
        "rounds",
        "client-steps",
        "samples",
        "ms/step",
        "evaluations",
        "est. time",
    ):
        table.add_column(col, justify="left" if col in ("id", "dataset", "method") else "right")
    for first, dataset, method, seed, members in rows:
        b = [found.jobs[j.id] for j in members]
        secs = None if any(x.seconds is None for x in b) else sum(x.seconds for x in b)
        table.add_row(
            first,
            escape(dataset),
            escape(method),
            seed,
            _span(j.config.rounds for j in members),
            f"{sum(x.client_steps for x in b):,}",
            f"{sum(x.samples for x in b):,}",
            b[0].ms_per_step,
            f"{sum(evaluations(j.config) for j in members):,}",
            duration(secs),
        )
    table.add_section()
    steps, samples = sum(b.client_steps for b in found.jobs.values()), sum(b.samples for b in found.jobs.values())
    table.add_row("total", "", "", "", "", f"{steps:,}", f"{samples:,}", "", "", duration(found.seconds))
    lines = [table, total_line(found)]
    if found.assumed:
        measured = f"measured in {time.perf_counter() - start:.1f} s"
        lines.append("assumed:\n" + "\n".join(f"  {a}" for a in (*found.assumed, measured)))
    return lines


def grouped(jobs: list[Job], found: Estimate) -> list:
    groups: dict[tuple[str, str], list[Job]] = {}
    for j in jobs:
        groups.setdefault((j.dataset_label, j.method_label.split("[")[0]), []).append(j)
    return [(str(len(m)), d, meth, _span(j.config.seed for j in m), m) for (d, meth), m in groups.items()]


def _span(values) -> str:
    values = set(values)
    return f"{min(values)}" if len(values) == 1 else f"{min(values)}-{max(values)}"
