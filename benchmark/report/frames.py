"""A suite's results on disk as pandas DataFrames: the one place reports and figures read them.

`jobs_frame`: one row per job (labels, status, seed, settings, summary numbers, every metric).
`rounds_frame`: one row per evaluated round per job (accuracy, EMA accuracy, cumulative bytes
and training seconds, and each per-round value declared with `column`: round_values.py), with the
job's labels and status beside each row.

Status is the summary's (finished / diverged / failed / stopped, see store/job_status.py), else
`running` while a live process holds the job's heartbeat, else `not run` (possibly with rounds
from an interrupted run in metrics.jsonl).
"""

from __future__ import annotations

import itertools
import math
import time

import pandas as pd

from benchmark.round_values import in_columns
from benchmark.store.layout import Store
from benchmark.store.records import NO_SUMMARY, FailedSummary, JobSummary, RoundRecord, measured, summary_from_json
from benchmark.suite.expand import Job

RUNNING, NOT_RUN = "running", "not run"
LABEL_COLUMNS = ["entry", "method", "setting", "seed", "job_id", "status"]
ROUND_COLUMNS = [*LABEL_COLUMNS, "round", "test_acc", "ema_acc", "bytes", "wall_s", "subopt"]
JOB_COLUMNS = [
    *LABEL_COLUMNS,
    "entry_index",
    "method_label",
    "settings",
    "rounds",
    "rounds_completed",
    "diverged_at_round",
    "final_acc",
    "final_ema_acc",
    "final_subopt",
    "final_val_ema_acc",
    "bytes",
    "wall_s",
    "error",
    "stale",  # the parts whose code changed since the job ran, comma-joined ('' for none: run/stale.py)
]


def method_name(job: Job) -> str:
    """The method without its method-grid point: `FedACG[lam=0.8]` -> `FedACG` (what a grid collapses to)."""
    return job.method_label.split("[")[0]


def job_settings(job: Job) -> str:
    """The method-grid and suite-grid / override settings of a job, `k=v` joined by spaces ('' for none)."""
    return " ".join(f"{k}={v}" for k, v in {**job.grid_point, **job.suite_point}.items())


def _labels(job: Job, status: str) -> dict:
    return {
        "entry": job.dataset_label,
        "method": method_name(job),
        "setting": job.setting_label,
        "seed": job.config.seed,
        "job_id": job.id,
        "status": status,
    }


def _status(summary: JobSummary | FailedSummary | None, jobdir, now: float) -> str:
    from benchmark.store.heartbeat import is_alive, read_heartbeat

    if summary and summary.status:
        return summary.status
    heartbeat = read_heartbeat(jobdir.heartbeat)
    return RUNNING if heartbeat and is_alive(heartbeat, now) else NOT_RUN


def _wall_seconds(records: list[RoundRecord]) -> list[float]:
    """Cumulative training seconds per record: `wall_s` where the runner wrote it; for records
    without it, from the `time` stamps (the first round's length estimated as the mean of the
    following ones); NaN when neither is there."""
    if all(r.wall_s is not None for r in records):
        return [float(r.wall_s) for r in records]
    stamps = [r.time for r in records]
    if not records or any(t is None for t in stamps):
        return [math.nan] * len(records)
    rounds = [r.round for r in records]
    per_round = (stamps[-1] - stamps[0]) / (rounds[-1] - rounds[0]) if len(records) > 1 else math.nan
    return [t - stamps[0] + per_round * rounds[0] for t in stamps]


def _summary_and_status(job: Job, store: Store, now: float):
    from benchmark.store.job_dir import JobDir

    jobdir = JobDir.for_reading(store, job.id)
    summary = jobdir.read_summary()
    return jobdir, summary, _status(summary, jobdir, now)


def _total_bytes(d: RoundRecord | JobSummary) -> float:
    """Bytes down + up of a record or summary; NaN when it has none."""
    return math.nan if d.bytes_down is None or d.bytes_up is None else d.bytes_down + d.bytes_up


def _stale_text(job: Job, summary: JobSummary | FailedSummary | None) -> str:
    from benchmark.run.stale import UNKNOWN, stale_parts

    parts = stale_parts(job, summary)
    return "" if parts == UNKNOWN else ", ".join(parts)


def jobs_frame(jobs: list[Job], store: Store | None = None, summaries: dict[str, dict] | None = None) -> pd.DataFrame:
    """One row per job in `store`: LABEL_COLUMNS,
    the rest of JOB_COLUMNS, then a column per summary metric (acc@R, rounds_to@X, bytes_to@X, ...;
    missing values NaN, a `rounds_to` never reached stays the string '>R'). `summaries` (job id ->
    summary, what a run returned) instead of the files: a job without one is `not run`."""
    now, rows = time.time(), []
    for job in jobs:
        if summaries is None:
            _, summary, status = _summary_and_status(job, store, now)
        else:  # as `run` hands them back: typed here
            summary = None if (given := summaries.get(job.id)) is None else summary_from_json(given)
            status = (summary.status if summary else None) or NOT_RUN
        s = measured(summary or NO_SUMMARY)
        rows.extend(
            {
                **_labels(view, status),
                "entry_index": view.dataset_index,
                "method_label": view.method_label,
                "settings": job_settings(view),
                "rounds": job.config.rounds,
                "rounds_completed": s.rounds_completed,
                "diverged_at_round": s.diverged.at_round if s.diverged else None,
                "final_acc": s.final_acc,
                "final_ema_acc": s.final_ema_acc,
                "final_subopt": s.final_subopt,
                "final_val_ema_acc": s.final_val_ema_acc,
                "bytes": _total_bytes(s),
                "wall_s": s.wall_time_s,
                "error": (str((summary or s).error or "").splitlines() or [None])[0],
                "stale": _stale_text(job, summary),
                **s.metrics,
                # natural-user data: the last round's per-client accuracy, summarised (client_p10 ... client_mean)
                **{f"client_{k}": v for k, v in (s.client_acc or {}).items() if k != "clients"},
            }
            for view in job.views  # a job another method's grid point shares counts for that method too
        )
    frame = pd.DataFrame(rows)
    metric_columns = [c for c in frame.columns if c not in JOB_COLUMNS]
    return frame.reindex(columns=JOB_COLUMNS + metric_columns)


def rounds_frame(jobs: list[Job], store: Store) -> pd.DataFrame:
    """One row per evaluated round per job (ROUND_COLUMNS, then a column per value declared with `column`):
    `bytes` = bytes down + up so far, `wall_s` = training seconds so far, `ema_acc` = the EMA-0.9 accuracy of
    acc@R. Jobs with no rounds on disk have no rows; a job that diverged keeps its finite rounds."""
    now, rows, declared = time.time(), [], [v.name for v in in_columns()]
    for job in jobs:
        jobdir, _, status = _summary_and_status(job, store, now)
        records = jobdir.read_metrics()
        for labels, (rec, wall) in itertools.product(
            [_labels(view, status) for view in job.views], zip(records, _wall_seconds(records))
        ):
            rows.append(
                {
                    **labels,
                    "round": rec.round,
                    "test_acc": rec.test_acc,
                    "ema_acc": rec.ema_acc,
                    "bytes": _total_bytes(rec),
                    "wall_s": wall,
                    "subopt": rec.subopt,
                    **{name: rec.value(name) for name in declared},
                }
            )
    return pd.DataFrame(rows, columns=ROUND_COLUMNS + declared)
