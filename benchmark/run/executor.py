"""Run a suite's jobs in this process, one after another, with a live progress display.

Finished jobs are skipped; a job that fails is recorded (status "failed", the error in its
summary.json) and the suite goes on. Bad user input (UserError) stops the suite with exit 2.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Callable

from rich.console import Console

from benchmark.errors import UserError
from benchmark.run.job_runner import run_job
from benchmark.run.progress import SuiteProgress
from benchmark.run.results import JobDir, atomic_write_json
from benchmark.run.tracking import NullTracker
from benchmark.suite.expand import Job


def failed_summary(job: Job, suite: str, error: str, trace: str = "") -> dict:
    return {"job_id": job.id, "suite": suite, "dataset": job.dataset_label, "method": job.method_label,
            "seed": job.config.seed, "status": "failed", "error": error, "traceback": trace}


def run_or_record_failure(job: Job, suite: str, jobdir: JobDir, device: str, tracker,
                          on_eval: Callable[[dict], None] | None = None, stop_after: int | None = None,
                          on_checkpoint: Callable[[int], None] | None = None) -> dict:
    """`run_job`, except that a crash becomes a "failed" summary.json; a UserError propagates."""
    try:
        return run_job(job, suite, jobdir, device, tracker, on_eval, stop_after, on_checkpoint)
    except UserError:
        raise
    except Exception as err:  # a crashing job must not take the suite (or its results) down
        summary = failed_summary(job, suite, f"{type(err).__name__}: {err}", traceback.format_exc())
        atomic_write_json(jobdir.summary, summary)
        tracker.end_job(summary, [jobdir.summary])
        return summary


def run_jobs(jobs: list[Job], suite: str, results_root: Path, device: str = "cpu", tracker=None,
             console: Console | None = None, stop_after: int | None = None) -> dict[str, dict]:
    """Run every unfinished job; returns job id -> summary (finished, skipped, or failed)."""
    tracker = tracker or NullTracker()
    summaries: dict[str, dict] = {}
    with SuiteProgress(console or Console(stderr=True), len(jobs)) as show:
        for job in jobs:
            jobdir = JobDir(results_root, suite, job.id)
            if done := jobdir.skipped_summary():
                summaries[job.id] = done
                show.skipped(job)
                continue
            show.started(job)
            summaries[job.id] = run_or_record_failure(job, suite, jobdir, device, tracker,
                                                      lambda rec, job=job: show.round(job.id, rec), stop_after)
            show.ended(job, summaries[job.id])
    return summaries
