"""Run a suite's jobs in this process, one after another, with a live progress display.

Finished jobs are skipped; a job that fails is recorded (status "failed", the error in its
summary.json) and the suite goes on. Bad user input (UserError) stops the suite with exit 2.
"""

from __future__ import annotations

import traceback
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from benchmark.errors import UserError
from benchmark.run.batched import BatchedJobs
from benchmark.run.job_runner import run_job
from benchmark.run.results import JobDir, atomic_write_json
from benchmark.run.tracking import NullTracker
from benchmark.suite.expand import Job


def progress_columns() -> tuple:
    """Jobs done/total, and per running job its round bar and latest accuracy (`status` field)."""
    return (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"), TimeElapsedColumn())


def failed_summary(job: Job, suite: str, error: str, trace: str = "") -> dict:
    return {"job_id": job.id, "suite": suite, "dataset": job.dataset_label, "method": job.method_label,
            "seed": job.config.seed, "status": "failed", "error": error, "traceback": trace}


def run_jobs(jobs: list[Job], suite: str, results_root: Path, device: str = "cpu", tracker=None,
             console: Console | None = None, stop_after: int | None = None) -> dict[str, dict]:
    """Run every unfinished job; returns job id -> summary (finished, skipped, or failed)."""
    tracker = tracker or NullTracker()
    console = console or Console(stderr=True)
    summaries: dict[str, dict] = {}
    batched = BatchedJobs([j for j in jobs if not JobDir(results_root, suite, j.id).skipped_summary()])
    with Progress(*progress_columns(), console=console, transient=False) as progress:
        suite_task = progress.add_task("jobs", total=len(jobs), status="")
        for job in jobs:
            jobdir = JobDir(results_root, suite, job.id)
            if done := jobdir.skipped_summary():
                summaries[job.id] = done
                progress.advance(suite_task)
                continue
            label = f"{job.dataset_label} / {job.method_label} / seed {job.config.seed}"
            task = progress.add_task(label[:60], total=job.config.rounds, status="")

            def on_eval(rec: dict, task=task) -> None:
                progress.update(task, completed=rec["round"], status=f"acc {rec['test_acc']:.2f}% (ema {rec['ema_acc']:.2f})")

            try:
                summaries[job.id] = run_job(job, suite, jobdir, device, tracker, on_eval, stop_after,
                                             batched.simulation_for)
            except UserError:
                raise
            except Exception as err:  # a crashing job must not take the suite (or its results) down
                summary = failed_summary(job, suite, f"{type(err).__name__}: {err}", traceback.format_exc())
                atomic_write_json(jobdir.summary, summary)
                tracker.end_job(summary, [jobdir.summary])
                summaries[job.id] = summary
                console.print(f"[red]job {job.id} ({label}) failed: {type(err).__name__}: {err}[/red]")
            progress.update(task, visible=False)
            progress.advance(suite_task)
    return summaries
