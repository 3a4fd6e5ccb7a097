"""Run a suite's jobs in this process, one after another, reporting progress (run/progress.py).

Finished jobs are skipped; a job that fails is recorded (status "failed", the error in its
summary.json) and the suite goes on. Bad user input (UserError) stops the suite with exit 2.
"""

from __future__ import annotations

import traceback
from pathlib import Path

from benchmark.errors import UserError
from benchmark.run.job_runner import run_job
from benchmark.run.progress import LogProgress
from benchmark.run.results import JobDir, atomic_write_json
from benchmark.run.tracking import NullTracker
from benchmark.suite.expand import Job


def failed_summary(job: Job, suite: str, error: str, trace: str = "") -> dict:
    return {"job_id": job.id, "suite": suite, "dataset": job.dataset_label, "method": job.method_label,
            "seed": job.config.seed, "status": "failed", "error": error, "traceback": trace}


def run_jobs(jobs: list[Job], suite: str, results_root: Path, device: str = "cpu", tracker=None,
             progress=None, stop_after: int | None = None) -> dict[str, dict]:
    """Run every unfinished job; returns job id -> summary (finished, skipped, or failed)."""
    tracker = tracker or NullTracker()
    progress = progress or LogProgress(jobs)
    summaries: dict[str, dict] = {}
    with progress:
        for job in jobs:
            jobdir = JobDir(results_root, suite, job.id)
            if done := jobdir.skipped_summary():
                summaries[job.id] = done
                progress.skipped(job, done)
                continue
            progress.job_started(job)
            try:
                summaries[job.id] = run_job(job, suite, jobdir, device, tracker,
                                            lambda rec, job=job: progress.evaluated(job, rec), stop_after)
            except UserError:
                raise
            except Exception as err:  # a crashing job must not take the suite (or its results) down
                summary = failed_summary(job, suite, f"{type(err).__name__}: {err}", traceback.format_exc())
                atomic_write_json(jobdir.summary, summary)
                tracker.end_job(summary, [jobdir.summary])
                summaries[job.id] = summary
            progress.job_finished(job, summaries[job.id])
    return summaries
