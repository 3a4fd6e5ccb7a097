"""`fedbench status`: where every job of a suite stands, read from its results folder only
(summary.json, heartbeat.json, metrics.jsonl), so it works while a run is in progress (in this
or another process) and on interrupted suites."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

from rich.table import Table

from benchmark.run.progress import duration
from benchmark.run.stale import UNKNOWN, stale_parts
from benchmark.store.heartbeat import is_alive, read_heartbeat, seconds_per_round
from benchmark.store.job_dir import JobDir
from benchmark.store.job_status import DAMAGED, DIVERGED, FAILED, FINISHED, STOPPED
from benchmark.store.layout import Store
from benchmark.store.records import NO_SUMMARY, measured
from benchmark.suite.expand import Job

STATES = ("done", "running", "failed", "diverged", "pending", DAMAGED)


def _states(statuses: list[JobStatus]) -> tuple[str, ...]:
    """The states a table or line counts: damaged only where a job is (it is rare, and never a result)."""
    return STATES if any(s.state == DAMAGED for s in statuses) else STATES[:-1]


@dataclass
class JobStatus:
    job: Job
    state: str  # one of STATES
    rounds_done: int
    acc: float | None  # latest test accuracy (none for failed or diverged jobs: it is no result)
    sec_per_round: float | None  # measured on this job
    note: str = ""
    eta_s: float | None = None  # remaining rounds x measured (or estimated) seconds per round
    stale: list[str] | str = field(default_factory=list)  # the parts whose code changed since it ran (run/stale.py)

    @property
    def rounds_left(self) -> int:
        return 0 if self.state in ("done", "failed", "diverged") else self.job.config.rounds - self.rounds_done


def job_status(job: Job, jobdir: JobDir, now: float) -> JobStatus:
    hb = read_heartbeat(jobdir.heartbeat)
    if hb and is_alive(hb, now):
        return JobStatus(
            job, "running", hb["round"], hb.get("test_acc"), seconds_per_round(hb), f"pid {hb['pid']} on {hb['host']}"
        )
    if damage := jobdir.damage():  # not done: the next run trains it again, from its start or checkpoint
        return JobStatus(job, DAMAGED, 0, None, None, f"{damage}; the next run trains it again")
    summary = jobdir.read_summary() or NO_SUMMARY
    status, ran = summary.status, measured(summary)
    rounds = ran.rounds_completed or 0
    per_round = ran.wall_time_s / rounds if rounds and ran.wall_time_s else None
    stale = stale_parts(job, summary)
    changed = f"stale: {', '.join(stale)} changed; " if stale and stale != UNKNOWN else ""
    if status == FINISHED and jobdir.model.exists():
        return JobStatus(job, "done", rounds, ran.final_acc, per_round, changed.rstrip("; "), stale=stale)
    if status in (FAILED, DIVERGED):  # no accuracy: neither has a result to show
        what = str(summary.error or "").splitlines()
        return JobStatus(job, status, rounds, None, per_round, changed + (what[0][:80] if what else ""), stale=stale)
    last = jobdir.last_record()
    if status == STOPPED:
        return JobStatus(job, "pending", rounds, ran.final_acc, per_round, "stopped early (--stop-after); resumes")

    if last is None and not jobdir.checkpoint.exists():
        return JobStatus(job, "pending", 0, None, None)
    resumes = "resumes from its checkpoint" if jobdir.checkpoint.exists() else "no checkpoint: restarts"
    round_ = last.round if last else 0
    return JobStatus(
        job, "pending", round_, last and last.test_acc, None, f"interrupted near round {round_}; {resumes}"
    )


# from the most to the least similar job whose round time can stand in for an unmeasured one
SIMILAR = (
    lambda job: (job.dataset_label, job.method_label),
    lambda job: job.dataset_label,
    lambda job: None,
)


def estimate_etas(statuses: list[JobStatus]) -> None:
    """Fill eta_s: a job's own round time, else the median over the most similar measured jobs
    (each group's median computed once: a suite of 10⁵ jobs takes no longer than its reading)."""
    medians = []
    for similar in SIMILAR:
        pools: dict = {}
        for s in statuses:
            if s.sec_per_round:
                pools.setdefault(similar(s.job), []).append(s.sec_per_round)
        medians.append({key: statistics.median(pool) for key, pool in pools.items()})
    for s in statuses:
        if not s.rounds_left:
            continue
        per_round = s.sec_per_round or next(
            (m[similar(s.job)] for similar, m in zip(SIMILAR, medians) if similar(s.job) in m), None
        )
        s.eta_s = s.rounds_left * per_round if per_round else None


def suite_status(jobs: list[Job], store: Store) -> list[JobStatus]:
    """The status of each of `jobs`, read from the job store by id (whichever suite ran it)."""
    now = time.time()
    statuses = [job_status(j, JobDir.for_reading(store, j.id), now) for j in jobs]
    estimate_etas(statuses)
    return statuses


STYLE = {"done": "green", "running": "cyan", "failed": "red", "diverged": "magenta", "pending": "dim"}
STYLE[DAMAGED] = "yellow"


LISTED_UP_TO = 200  # jobs a table lists one by one; a larger suite is summed up per dataset and method


def grouped(statuses: list[JobStatus], every_job: bool) -> bool:
    """Over LISTED_UP_TO jobs (unless `every_job`), a row per dataset and method: a FedAc figure has
    10⁴ jobs, and a row each is minutes of rendering, and unreadable."""
    return len(statuses) > LISTED_UP_TO and not every_job


def status_table(suite: str, statuses: list[JobStatus], every_job: bool = False) -> Table:
    """A row per job, or per dataset and method (`grouped`)."""
    if grouped(statuses, every_job):
        return _group_table(suite, statuses)
    table = Table(title=f"{suite}: {len(statuses)} jobs")
    for col in ("id", "dataset", "method", "seed", "state", "rounds", "latest acc (%)", "s/round", "ETA", "note"):
        table.add_column(
            col,
            justify="right" if col in ("seed", "rounds", "latest acc (%)", "s/round", "ETA") else "left",
            no_wrap=col in ("id", "method", "state"),
        )
    for s in statuses:
        c = s.job.config
        table.add_row(
            s.job.id,
            s.job.dataset_label,
            s.job.method_label,
            str(c.seed),
            f"[{STYLE[s.state]}]{s.state}[/]",
            f"{s.rounds_done}/{c.rounds}",
            "-" if s.acc is None else f"{s.acc:.2f}",
            "-" if s.sec_per_round is None else f"{s.sec_per_round:.3g}",
            duration(s.eta_s) if s.rounds_left else "",
            s.note,
        )
    return table


def _group_table(suite: str, statuses: list[JobStatus]) -> Table:
    groups: dict[tuple[str, str], list[JobStatus]] = {}
    for s in statuses:
        groups.setdefault((s.job.dataset_label, s.job.method_label), []).append(s)
    table = Table(title=f"{suite}: {len(statuses)} jobs, a row per dataset and method (--jobs lists each job)")
    states = _states(statuses)
    for col in ("dataset", "method", "jobs", *states, "ETA"):
        table.add_column(col, justify="left" if col in ("dataset", "method") else "right", no_wrap=True)
    for (dataset, method), members in groups.items():
        counts = [sum(s.state == state for s in members) for state in states]
        left = [s for s in members if s.rounds_left]
        etas = [s.eta_s for s in left if s.eta_s is not None]
        at_least = "≥ " if len(etas) < len(left) else ""  # some unfinished jobs have no estimate
        table.add_row(
            dataset,
            method,
            str(len(members)),
            *(f"[{STYLE[state]}]{n}[/]" if n else "-" for state, n in zip(states, counts)),
            f"{at_least}{duration(sum(etas))}" if etas else "",
        )
    return table


def failed_lines(statuses: list[JobStatus], limit: int = 20) -> list[str]:
    """The failed jobs, a line each (id, what, why): the grouped table counts them only."""
    failed = [s for s in statuses if s.state == "failed"]
    lines = [
        f"failed: {s.job.id} {s.job.dataset_label} / {s.job.method_label} / seed {s.job.config.seed}: {s.note}"
        for s in failed[:limit]
    ]
    return lines + ([f"... and {len(failed) - limit} more failed (--jobs lists them)"] if len(failed) > limit else [])


def status_line(statuses: list[JobStatus]) -> str:
    counts = ", ".join(f"{sum(s.state == k for s in statuses)} {k}" for k in _states(statuses))
    left = [s for s in statuses if s.rounds_left]
    if not left:
        return counts
    known = [s.eta_s for s in left if s.eta_s is not None]
    eta = f"ETA {duration(sum(known))} run one after another" if known else "ETA unknown (no job measured yet)"
    if known and len(known) < len(left):
        eta += f" ({len(left) - len(known)} unfinished jobs not estimated)"
    return f"{counts}; {eta}"


def status_records(statuses: list[JobStatus]) -> list[dict]:
    """`status --json`: a record per job with what the table shows, numbers as numbers."""
    return [
        {
            "job_id": s.job.id,
            "dataset": s.job.dataset_label,
            "method": s.job.method_label,
            "setting": s.job.setting_label,
            "seed": s.job.config.seed,
            "state": s.state,
            "rounds_done": s.rounds_done,
            "rounds": s.job.config.rounds,
            "latest_acc": s.acc,
            "sec_per_round": s.sec_per_round,
            "eta_s": s.eta_s if s.rounds_left else None,
            "note": s.note,
            "stale": s.stale,
        }
        for s in statuses
    ]
