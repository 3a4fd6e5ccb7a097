"""Run a suite's jobs as Ray tasks: local cluster or `ray.init(address=...)`, fractional GPUs.

Same contract as `run/executor.run_jobs`: finished jobs are skipped, a failed job is recorded
and the suite goes on, a UserError stops the suite. Each task runs `run_jobs` on its one job
(so resume, failure records and results files are exactly the local executor's) with a
NullTracker; the driver mirrors every job that ran to MLflow from its results files, so
workers need no access to the tracking store.
"""

from __future__ import annotations

import json
import traceback
from pathlib import Path

from benchmark.errors import UserError
from benchmark.run.executor import failed_summary, reusable_summary, run_jobs
from benchmark.run.progress import LogProgress
from benchmark.run.job_runner import job_config_json
from benchmark.run.results import JobDir, atomic_write_json
from benchmark.run.tracking import NullTracker
from benchmark.suite.expand import Job


def import_ray():
    try:
        import ray
    except ImportError:
        raise UserError("the Ray executor needs Ray: pip install 'fedbench[ray]'") from None
    return ray


def run_one_job(job: Job, suite: str, results_root: str, device: str, stop_after: int | None, threads: int) -> dict:
    """Body of a Ray task: {"summary": ...}, or {"user_error": message} (re-raised by the driver)."""
    import torch

    torch.set_num_threads(threads)
    try:
        summaries = run_jobs([job], suite, Path(results_root), device, NullTracker(), LogProgress([job]), stop_after)
    except UserError as err:
        return {"user_error": str(err)}
    return {"summary": summaries[job.id]}


def mirror_to_tracker(tracker, job: Job, suite: str, jobdir: JobDir, summary: dict) -> None:
    """Replay one job's results files into the tracker, as if it had run in this process."""
    config = json.loads(jobdir.config.read_text()) if jobdir.config.exists() else job_config_json(job, suite)
    tracker.start_job(job, config)
    tracker.log_records(jobdir.read_metrics())
    tracker.end_job(summary, [f for f in (jobdir.config, jobdir.metrics, jobdir.summary) if f.exists()])


def _check_device(device: str, gpus_per_job: float) -> None:
    if device.startswith("cuda") and gpus_per_job <= 0:
        raise UserError(f"--device {device} under Ray needs --gpus-per-job > 0 (e.g. 0.25 for 4 jobs per GPU)")
    if device.startswith("cuda:"):
        raise UserError(f"--device {device}: under Ray use --device cuda; Ray assigns each job its GPU")


def check_resources(available: dict, gpus_per_job: float, cpus_per_job: float) -> None:
    """A task asking for more than the whole cluster has would wait forever: refuse it now."""
    for flag, want, kind in (("--gpus-per-job", gpus_per_job, "GPU"), ("--cpus-per-job", cpus_per_job, "CPU")):
        have = available.get(kind, 0)
        if want > have:
            raise UserError(f"{flag} {want:g}: the Ray cluster has {have:g} {kind}(s), so no job could ever start; "
                            f"lower {flag} or join a cluster that has them (--ray-address)")


def run_jobs_ray(jobs: list[Job], suite: str, results_root: Path, device: str = "cpu", tracker=None,
                 progress=None, stop_after: int | None = None, address: str | None = None,
                 gpus_per_job: float = 0.0, cpus_per_job: float = 1.0) -> dict[str, dict]:
    """Run every unfinished job as a Ray task; returns job id -> summary (finished, skipped, or failed)."""
    _check_device(device, gpus_per_job)
    ray = import_ray()
    tracker = tracker or NullTracker()
    progress = progress or LogProgress(jobs)
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address)  # None: start a local cluster (or join $RAY_ADDRESS)
    try:
        check_resources(ray.cluster_resources(), gpus_per_job, cpus_per_job)
    except UserError:
        if started_here:
            ray.shutdown()
        raise
    task = ray.remote(run_one_job).options(num_cpus=cpus_per_job, num_gpus=gpus_per_job, max_retries=0)

    # absolute: Ray workers do not run in the driver's working directory; on a multi-node
    # cluster this folder must be on a filesystem shared by the nodes (the driver reads it back)
    root = str(Path(results_root).resolve())
    summaries: dict[str, dict] = {}
    pending: dict = {}  # object ref -> job
    try:
        with progress:  # Ray workers report no rounds: the display advances as jobs finish
            for job in jobs:
                if done := reusable_summary(job, JobDir(results_root, suite, job.id)):
                    summaries[job.id] = done
                    progress.skipped(job, done)
                else:
                    ref = task.remote(job, suite, root, device, stop_after, max(1, int(cpus_per_job)))
                    pending[ref] = job
            while pending:
                (ref,), _ = ray.wait(list(pending), num_returns=1)
                job = pending.pop(ref)
                summaries[job.id] = _collect(ray, ref, job, suite, results_root, tracker)
                progress.job_finished(job, summaries[job.id])
    except BaseException:  # UserError, Ctrl-C: stop what is queued; finished jobs and checkpoints stay
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started_here:
            ray.shutdown()
    return {job.id: summaries[job.id] for job in jobs}


def _collect(ray, ref, job: Job, suite: str, results_root: Path, tracker) -> dict:
    jobdir = JobDir(results_root, suite, job.id)
    try:
        result = ray.get(ref)
    except Exception as err:  # the worker itself died (OOM, lost node): record it as run_jobs would
        summary = failed_summary(job, suite, f"{type(err).__name__}: {err}", traceback.format_exc())
        atomic_write_json(jobdir.summary, summary)
    else:
        if "user_error" in result:
            raise UserError(result["user_error"])
        summary = result["summary"]
    if not summary.get("skipped"):  # finished in the meantime by another run: already mirrored
        mirror_to_tracker(tracker, job, suite, jobdir, summary)  # the tracker finds the job's run
    return summary
