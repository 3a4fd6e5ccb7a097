"""The `local` executor: a suite's jobs in this process, one after another, reporting progress
(run/progress.py).

Finished and diverged jobs are skipped; a job that fails is recorded (status "failed", the
error in its summary.json) and the suite goes on. Bad user input (UserError) stops the suite
with exit 2. Each job is trained under a per-job lock, so processes sharing a results folder
never train the same job twice: a job another process holds is left for last, then waited for.
Jobs are stored by id (store/job_store.py): a job another suite finished is skipped as done.
"""

from __future__ import annotations

import traceback
from functools import partial

from benchmark.errors import UserError
from benchmark.run.callbacks import Shown
from benchmark.run.code_fingerprint import code_fingerprint
from benchmark.run.code_parts import code_versions, job_code
from benchmark.run.executor_base import EXECUTORS, Executor
from benchmark.run.progress import LogProgress, log
from benchmark.run.protocol_batches import ProtocolBatches
from benchmark.run.stale import marked, set_aside_stale
from benchmark.run.tracking import NullTracker
from benchmark.store.job_dir import JobDir, atomic_write_json, environment_error, is_environment_error
from benchmark.store.job_store import job_lock, link_into_suite
from benchmark.store.layout import Store
from benchmark.store.records import FailedSummary, JobSummary
from benchmark.suite.expand import Job


# The engine (and torch) is imported when a job is first looked at under its lock or trained, never by a
# run whose jobs are all done (run/triage.py reuses those before the executor sees them).
def data_fingerprint(config) -> str:
    from benchmark.engine.sources import data_fingerprint as of_loaded_data

    return of_loaded_data(config)


def run_job(*args, **kwargs) -> JobSummary:
    from benchmark.run.job_runner import run_job as run

    return run(*args, **kwargs)


def failed_summary(job: Job, suite: str, error: str, trace: str = "") -> FailedSummary:
    return FailedSummary(
        job.id,
        suite,
        job.dataset_label,
        job.method_label,
        job.config.seed,
        error,
        trace,
        code_fingerprint=code_fingerprint(),
        code_parts=job_code(job.config),
        code_versions=code_versions(job.config),
    )


def reusable_summary(job: Job, jobdir: JobDir, keep_stale: bool = False) -> JobSummary | None:
    """The summary of a job already done on the same data by the same code (marked skipped; with
    `keep_stale`, by other code too, marked stale: run/stale.py), else None."""
    return marked(job, jobdir.skipped_summary(data_fingerprint(job.config)), keep_stale)


def run_jobs(
    jobs: list[Job],
    suite: str,
    store: Store,
    device: str = "cpu",
    tracker=None,
    progress=None,
    stop_after: int | None = None,
    keep_stale: bool = False,
) -> dict[str, JobSummary | FailedSummary]:
    """Run every unfinished job; returns job id -> summary (finished, diverged, skipped, or failed).
    A done job whose code changed since (stale) runs again, unless `keep_stale`."""
    tracker = tracker or NullTracker()
    progress = progress or LogProgress(jobs)
    summaries: dict[str, JobSummary | FailedSummary] = {}
    # jobs a protocol claims (run/protocols.py): each batch is computed once, when its first job is due
    batched = ProtocolBatches([j for j in jobs if not reusable_summary(j, JobDir(store, j.id), keep_stale)])
    with progress:

        def attempt(job: Job, wait: bool) -> bool:
            """Run or skip `job`; False when another process holds it and `wait` is off."""
            jobdir = JobDir(store, job.id)
            lock = job_lock(store, job.id)
            done = reusable_summary(job, jobdir, keep_stale)
            held = lock.acquire(blocking=wait and not done)  # a finished job: only to tidy it, never waited for
            if not done and not held:
                return False
            link_into_suite(store, suite, job.id)  # the suite's view lists it, whoever ran it first
            try:  # re-read under the lock: the other process may have finished it meanwhile
                if held:  # temp files a killed process left, a finished job's too
                    jobdir.remove_stale_temps()
                if not (done := done or reusable_summary(job, jobdir, keep_stale)):
                    jobdir.set_aside_damaged()
                    jobdir.set_aside_other_data(data_fingerprint(job.config))
                    set_aside_stale(job, jobdir)
                if done:
                    summaries[job.id] = done
                    progress.skipped(job, done)
                else:
                    summaries[job.id] = _run_one(job, suite, jobdir, device, tracker, progress, stop_after, batched)
            finally:
                lock.release()
            return True

        held_elsewhere = [job for job in jobs if not attempt(job, wait=False)]
        for job in held_elsewhere:
            log.info("job %s: another fedbench process is training it; waiting for it to finish", job.id)
            attempt(job, wait=True)
    return {job.id: summaries[job.id] for job in jobs}


@EXECUTORS.register
class LocalExecutor(Executor):
    name = "local"
    runs_protocol_batches = True  # run_jobs computes them as ProtocolBatches

    def run(self, jobs, suite, store, device, tracker, progress, stop_after):
        return run_jobs(jobs, suite, store, device, tracker, progress, stop_after, self.keep_stale)


def run_or_record_failure(
    job: Job, suite: str, jobdir: JobDir, device: str, tracker, **how
) -> JobSummary | FailedSummary:
    """`run_job` (`how`: its keyword arguments), except that a crash becomes a "failed" summary.json;
    a UserError propagates. (The Ray executor's workers run their job through it too.)"""
    try:
        return run_job(job, suite, jobdir, device, tracker, **how)
    except UserError:
        raise
    except Exception as err:  # a crashing job must not take the suite (or its results) down
        if is_environment_error(err):  # a full disk or lost permissions: stop, resume later as after a kill
            raise environment_error(err, f"write the results of job {job.id}") from None
        summary = failed_summary(job, suite, f"{type(err).__name__}: {err}", traceback.format_exc())
        try:
            atomic_write_json(jobdir.summary, summary.to_json())
        except OSError as write_err:
            raise environment_error(write_err, f"record that job {job.id} failed ({err})") from None
        tracker.end_job(summary, [jobdir.summary])
        return summary


def _run_one(
    job: Job,
    suite: str,
    jobdir: JobDir,
    device: str,
    tracker,
    progress,
    stop_after: int | None,
    batched: ProtocolBatches,
) -> JobSummary | FailedSummary:
    progress.job_started(job, replayed=batched.covers(job))
    summary = run_or_record_failure(
        job,
        suite,
        jobdir,
        device,
        tracker,
        stop_after=stop_after,
        simulation_for=batched.simulation_for,
        callbacks=[Shown(progress, job)],
        on_clients=partial(progress.within_round, job),
    )
    progress.job_finished(job, summary)
    return summary
