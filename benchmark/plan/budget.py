"""`fedbench plan --budget`: what a suite will cost before it runs, and what the estimate assumed.

Client-steps and samples per job are exact: the splits are loaded as the run loads them, every round's
participants are drawn as the run draws them, and each participant's steps follow the batch plan of
engine/fed_data.py (E·⌈n/b⌉ steps and E·n samples over E epochs, or K steps of b, with b = min(B, n)).

Time is measured here, at the thread count the run will use (run/threads.py), and added up as the run
spends it: its start-up (plan/budget_timing.py), each job run on its own (set-up, client-steps at the
rate of real rounds of the job, evaluations; at one thread in CPU seconds), and the batches a protocol
computes together, which the protocol times on its own engine in CPU seconds (FedAc:
protocols/fedac/cost.py); CPU seconds are made wall seconds at a thread's share of a core now. The machine's load is in the jobs' measurements; the range is the
same work at the fastest and slowest timed rounds, and at the quietest and busiest load of the last
15 minutes. MLflow tracking is not counted (a run with `--no-tracking`). What was measured is
remembered per machine (plan/budget_memo.py): a second call measures only what is new.
"""

from __future__ import annotations

import functools
import json
import math
import time
from dataclasses import asdict, dataclass, replace

from rich.markup import escape
from rich.table import Table

from benchmark.data.participation import sample_clients
from benchmark.plan.budget_timing import (
    LONG_ROUND_S,
    Load,
    Rates,
    data_load_seconds,
    measure,
    process_age,
    run_imports_seconds,
    share_got,
)
from benchmark.store.layout import Store
from benchmark.suite.expand import Job

# CPU seconds a protocol may spend timing its batch shapes, heaviest first; the rest are scaled
# (protocols/fedac/cost.py). fedac_small's 15 shapes take 7.7-11 CPU-s, 48-151 s of a first call under
# load; its heaviest shape of each kind alone takes about 1.9 CPU-s, and past it the limit only decides
# how many more are timed: at 2 CPU-s 2 or 3 (a call's estimate moved with the count), at 1 its two
# every call (benchmarks/README.md, "FedAc's one-off costs")
PROTOCOL_TIME_LIMIT_S = 1.0
# timing job kinds; past it a kind takes the rates of one timed on its dataset and model. Methods differ most in
# cost (FedMLB's branches, SCAFFOLD's controls): at 3 s ci_femnist's SCAFFOLD and FedMLB+ACG took FedAvg's 22 s
# for runs of 46 and 86 s; at 10 s each of its four kinds is timed (a first call of 5 -> 8 s)
JOBS_TIME_LIMIT_S = 10.0


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
    if c.dataset.split.kind == "shared" and c.local.epochs is None and c.local.batch_size == 1:
        # each of M clients takes K steps of one example of the whole set: no data (nor torch) to load
        return [(c.local.steps, c.local.steps)] * c.num_clients
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


def cost_key(c) -> str:
    return c.model_dump_json(exclude={"method": True, "local": {"lr"}})  # an lr grid is one cost


def job_cost(job: Job) -> tuple[int, int]:
    """(client-steps, samples) of the whole job, from its split and its participation draws."""
    c = job.config
    key = cost_key(c)
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


def remembered_costs(jobs: list[Job], memo) -> None:
    """Every job's (client-steps, samples) into `job_cost`'s cache, from the memo where the data's files
    and loader are as they were (run/data_memo.py's stamp), else counted on the loaded data."""
    from benchmark.run.data_memo import DataMemo

    data = DataMemo()
    for job in jobs:
        key = cost_key(job.config)
        if key in _costs or (stamp := data.stamp(job.config)) is None:
            continue

        def counted(job=job):
            steps, samples = job_cost(job)
            return {"steps": steps, "samples": samples}, []

        found, _, _ = memo.remembered(("client costs", stamp, key), counted, per_load=False)
        _costs[key] = int(found["steps"]), int(found["samples"])


@functools.lru_cache(maxsize=256)
def _evaluations(rounds: int, eval_every: int, metrics: tuple[str, ...]) -> int:
    from benchmark.metrics import evaluated_round

    return sum(evaluated_round(r, rounds, eval_every, list(metrics)) for r in range(1, rounds + 1))


def evaluations(c) -> int:
    return _evaluations(c.rounds, c.eval_every, tuple(c.metrics))


def method_kind(job: Job) -> str:
    """The code a method runs at each client-step, without its hyper-parameters: its client terms and
    codecs. Server rules are not told apart: their work is once a round, over the uploads, and is
    counted in the timed rounds of the kind's first method."""
    m = job.config.method
    return "+".join([*(t.name for t in m.client), m.uplink.name, m.downlink.name]) or "plain"


def rate_key(job: Job) -> tuple:
    """What a client-step's time depends on; jobs alike in it share one timing (seeds, grids, splits)."""
    c = job.config
    return (
        c.dataset.name,
        c.model.name,
        c.local.batch_size,
        method_kind(job),
        json.dumps(c.model.params, sort_keys=True, default=str),
        c.execution,
        c.precision,
    )


def estimate(jobs: list[Job], device: str, remeasure: bool = False) -> Estimate:
    """Every job's client-steps and samples, and the run's time on `device`; what was measured before
    on this machine comes from its memo unless `remeasure` (plan/budget_memo.py)."""
    from benchmark.plan.budget_memo import Memo, machine_key
    from benchmark.run.protocol_batches import ProtocolBatches
    from benchmark.run.protocols import PROTOCOLS
    from benchmark.run.threads import cpu_choice, protocol_choice

    load = Load.now(probe=True)
    alone_threads = cpu_choice() if device == "cpu" else {"count": "torch's", "chosen_by": "GPU job"}
    memo = Memo(machine_key(device, alone_threads["count"]), remeasure, load)
    age = process_age()
    batched = ProtocolBatches(jobs)
    alone = [j for j in jobs if not batched.covers(j)]
    torch = bool(alone) or device != "cpu"  # a run of protocol batches only (FedAc's numpy) imports none
    what = ("run imports",) if torch else ("run imports", "no torch")
    imports, _, note = memo.remembered(what, lambda: ({"s": run_imports_seconds(torch)}, []))
    loading, data_lines = data_loads(alone, memo)  # before counting client-steps loads the data unseen
    startup = age + imports["s"] + loading
    share = load.share_now
    remembered_costs(jobs, memo)
    found: dict[str, Budget] = {}
    seconds = 0.0
    assumed = [
        f"device {device} ({memo.key['device_name']}); {load}",
        f"run start-up (imports, suite, data): {startup:.1f} s" + (f" (its imports {note})" if note else ""),
        *data_lines,
    ]
    for batch in batched.batches.values():  # rows without a time, until their protocol gives one
        found.update({j.id: Budget(*job_cost(j)) for j in batch})
    for name in {p for p, _ in batched.batches}:
        protocol = PROTOCOLS.get(name)
        groups = [b for (p, _), b in batched.batches.items() if p == name]
        threads = protocol_choice(protocol)
        what = ("protocol", name, device, threads["count"], *map(batch_shape, groups))
        cpu, lines, note = memo.remembered(what, measuring(protocol, groups, device), per_load=False)
        # CPU seconds of one thread at the share of a core it got while timed (memoised: at this load's);
        # "share" rides with the seconds in the memo's entry (measuring), and is no time itself
        got = share if note else cpu.get("share", share)
        times = {k: v / got for k, v in cpu.items() if k != "share"}
        if not times:
            assumed.append(f"protocol {name}: its batches' time is not known (not counted)")
            continue
        assumed += [f"protocol {name}: {threads['count']} thread(s), {threads['chosen_by']}", *lines]
        assumed.append(f"protocol {name}: CPU time / {got:.2f}, " + SHARE_SAID[not note])
        if note:
            assumed.append(f"protocol {name}: {note}")
        written = times["written"]
        seconds += times["startup"] + sum(times[str(i)] for i in range(len(groups))) + written * sum(map(len, groups))
        for i, batch in enumerate(groups):
            for j in batch:
                found[j.id] = Budget(*job_cost(j), seconds=times[str(i)] / len(batch) + written, ms_per_step="batched")
    fast, slow = seconds, seconds
    one_thread = device == "cpu" and alone_threads["count"] == 1  # timed in CPU seconds (job_rates)
    if alone:
        assumed.append(f"jobs on their own: {alone_threads['count']} thread(s), {alone_threads['chosen_by']}")
    rates: dict[tuple, Rates] = {}
    memoised: set[tuple] = set()
    timing_started = time.perf_counter()
    for job in alone:
        key = rate_key(job)
        if key not in rates:
            like = [k for k in rates if k[:3] == key[:3]]
            # past the time limit, or where a like kind's rates were memoised but this kind's not (an
            # earlier call's limit), a kind takes a like kind's rates: a second call gives the first's answer
            late = time.perf_counter() - timing_started > JOBS_TIME_LIMIT_S or any(k in memoised for k in like)
            if like and late and not remembered(memo, job, device):
                rates[key] = rates[like[0]]
                assumed.append(f"{' '.join(map(str, key[:4]))}: not timed (time limit), at {like[0][3]}'s rates")
            else:
                rates[key], said, note = job_rates(memo, job, device, one_thread)
                if note:
                    memoised.add(key)
                note = "; ".join(filter(None, (said, note)))
                r = rates[key]
                # a cut round's evaluation is guessed from its step, which a method's own work inflates (FedMLB's
                # 4x FedAvg's on FEMNIST): one measured on the same dataset and model is the same test pass
                evaluated = next((k for k in like if rates[k].rounds_timed), None)
                if not r.rounds_timed and evaluated:
                    rates[key] = r = replace(r, eval_s=rates[evaluated].eval_s)
                assumed.append(
                    f"{' '.join(map(str, key[:4]))}: {1e3 * r.step_s:.2f} ms/step "
                    f"({1e3 * r.fastest_step_s:.2f}-{1e3 * r.slowest_step_s:.2f}), "
                    + (
                        f"evaluation {1e3 * r.eval_s:.0f} ms, runner {1e3 * r.round_s:.1f} ms a round"
                        if r.rounds_timed
                        else f"a round too long to time whole: cut after {LONG_ROUND_S} s, evaluation "
                        + (
                            f"{1e3 * r.eval_s:.0f} ms as {evaluated[3]}'s (the same model and test set)"
                            if evaluated
                            else f"{1e3 * r.eval_s:.0f} ms guessed (a forward pass, a third of a step a batch)"
                        )
                    )
                    + f", set-up {r.setup_s:.1f} s"
                    + (f" ({note})" if note else "")
                )
        r, (steps, samples), evals = rates[key], job_cost(job), evaluations(job.config)
        fixed = r.setup_s + evals * r.eval_s + job.config.rounds * r.round_s
        found[job.id] = Budget(steps, samples, fixed + steps * r.step_s, f"{1e3 * r.step_s:.2f}")
        seconds += fixed + steps * r.step_s
        fast += fixed + steps * r.fastest_step_s
        slow += fixed + steps * r.slowest_step_s
    memo.save()
    quieter, busier = load.factors()
    assumed += ["MLflow tracking not counted (as `run --no-tracking`)", memo.summary()]
    total = startup + seconds
    return Estimate(found, total, (startup + fast) * quieter, (startup + slow) * busier, tuple(assumed))


def data_loads(jobs: list[Job], memo) -> tuple[float, list[str]]:
    """Seconds the run spends loading the datasets `jobs` train on (each once a process), timed now or
    memoised by the data's stamp (its files, loader code and versions: run/data_memo.py; its name and
    params where it has no files), and a line for each."""
    from benchmark.run.data_memo import DataMemo

    stamps = DataMemo()
    sources: dict[tuple, Job] = {}
    for job in jobs:
        d = job.config.dataset
        stamp = stamps.stamp(job.config)
        sources.setdefault((d.name, json.dumps(d.params, sort_keys=True), d.root, stamp), job)
    total, lines = 0.0, []
    for source, job in sources.items():
        if source[3] is None:  # nothing on disk says the data is as it was: timed now (and not memoised)
            took, note = data_load_seconds(job.config), ""
        else:
            found, _, note = memo.remembered(
                ("data load", *source), lambda j=job: ({"s": data_load_seconds(j.config)}, [])
            )
            took = found["s"]
        total += took
        lines.append(f"data {job.dataset_label}: loaded in {took:.1f} s, once a run" + (f" ({note})" if note else ""))
    return total, lines


SHARE_SAID = {
    True: "the share of a core this process got while timed",
    False: "a thread's share of a core now (probed)",
}


def job_shape(job: Job, device: str) -> tuple:
    """What a job kind's measured rates depend on (the memo's key): its rate key and its parts' code."""
    from benchmark.run.code_parts import job_code

    return ("job", device, *map(str, rate_key(job)), sorted(job_code(job.config).items()))


def remembered(memo, job: Job, device: str) -> bool:
    return memo.has(job_shape(job, device))


def job_rates(memo, job: Job, device: str, one_thread: bool = False) -> tuple[Rates, str, str]:
    """`job`'s kind's rates, from the memo or timed now (plan/budget_timing.py), how they were timed, and
    the memo's note ("" when timed now).
    A job trained at one thread on the CPU is timed in CPU seconds, made wall seconds at the share of a
    core this process got over the whole timing (its set-up and every round): the median of a few
    rounds' wall times is at the mercy of other processes' bursts."""

    def timed():
        c, costs = job.config, per_client(job.config)
        steps = lambda t: round_cost(c, costs, t)[0]  # noqa: E731
        if not one_thread:
            return asdict(measure(job, device, steps)), []
        cpu, got = share_got(lambda: asdict(measure(job, device, steps, time.process_time)))
        got = max(got, 1e-3)
        scaled = {k: v if k == "rounds_timed" else v / got for k, v in cpu.items()}
        return scaled, [f"CPU time / {got:.2f}, {SHARE_SAID[True]}"]

    values, lines, note = memo.remembered(job_shape(job, device), timed)
    return Rates(**values), "; ".join(lines), note


def batch_shape(batch: list[Job]) -> str:
    """What a protocol batch's time depends on: its jobs' settings but the seed and learning rate, and their number."""
    return f"{len(batch)}x" + batch[0].config.model_dump_json(exclude={"seed": True, "local": {"lr"}})


def measuring(protocol, groups: list[list[Job]], device: str):
    """A protocol's batches timed on its engine: each batch's seconds (by position), its start-up, and
    the job runner's writing of one job from its replay; no seconds when the protocol cannot say."""

    def timed():
        from benchmark.run.threads import for_protocol

        for_protocol(protocol)  # its batches are computed at its own thread count
        costs, got = share_got(lambda: protocol.batch_costs(groups, PROTOCOL_TIME_LIMIT_S))
        if costs is None:
            return {}, []
        written = replay_seconds(protocol, groups[0][0], device)
        times = {str(i): s for i, s in enumerate(costs.seconds)} | {"startup": costs.startup_s, "written": written}
        times["share"] = max(got, 1e-3)
        line = f"protocol {protocol.name}: the job runner writes each job's replay in {1e3 * written:.0f} CPU-ms"
        return times, [*costs.assumed, line]

    return timed


def replay_seconds(protocol, job: Job, device: str) -> float:
    """The CPU seconds the job runner takes to write one job of a protocol's batch from its replay (its
    files, summary and final model), timed on a one-round copy of `job` in a scratch folder."""
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
            start = time.process_time()
            run_job(
                short,
                "budget",
                JobDir(Store(Path(scratch) / str(attempt)), job.id),
                device,
                simulation_for=lambda _, r=replay: r,
            )
            took.append(time.process_time() - start)
    return min(took)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def total_line(found: Estimate) -> str:
    spread = f"{duration(found.low)} to {duration(found.high)}"
    return f"estimated run time: {duration(found.seconds)} ({spread}, by the spread of the timings and the load)"


def budget_table(
    suite_name: str, jobs: list[Job], device: str, every_job: bool = False, remeasure: bool = False
) -> list:
    """What `plan --budget` prints: the table (a row per job, or per dataset and method past
    LISTED_UP_TO jobs), the run's total with its range, and what was assumed."""
    from benchmark.report.status import LISTED_UP_TO

    start = time.perf_counter()
    found = estimate(jobs, device, remeasure)
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
