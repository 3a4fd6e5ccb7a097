"""Before a `run` loads data or imports torch: the jobs that are provably done, in one pass that only
reads. A job is done here when its folder holds a finished (or diverged) summary whose files can be
trusted (`JobDir.done_summary`: one read of summary.json, one of metrics.jsonl), of the code now (not
stale, run/stale.py) and of the data now, as far as the remembered fingerprint of the data tells
(run/data_memo.py). Such a job is linked into the suite's view and reported as skipped without
taking its lock: nothing can change a done job's files but a process that judges it not done, and it
judges as this pass does. Every other job (not done, damaged, stale, on other data, or whose data's
fingerprint is not remembered) goes to the executor, which looks again under the job's lock.

Over LISTED_UP_TO jobs, where a run keeps only each summary's `Outcome`, a job whose files are as the
index of done jobs (store/done_index.py) last found them, on the same code and data, is done without
that read: 3 stats instead of two reads and a parse.
"""

from __future__ import annotations

import os
from pathlib import Path

from benchmark.run.code_parts import code_stamp, job_code_stamp
from benchmark.run.data_memo import DataMemo
from benchmark.run.stale import marked
from benchmark.store.done_index import NONE, DoneIndex, signature
from benchmark.store.job_dir import TEMP_NAME, JobDir
from benchmark.store.job_store import job_lock, link_into_suite
from benchmark.store.layout import Store
from benchmark.store.records import JobSummary, Outcome
from benchmark.suite.expand import Job


def done_jobs(
    jobs: list[Job],
    store: Store,
    keep_stale: bool = False,
    outcome_only: bool = False,
    index: DoneIndex | None = None,
) -> dict[str, JobSummary | Outcome]:
    """Job id -> the summary a run reuses (marked skipped; with `keep_stale`, stale ones marked so), for
    the jobs that are done on the data and code found now (`outcome_only`: only its `Outcome`, and `index`
    may tell that without reading it; it learns what the full check finds). Reads only (and creates
    nothing: `reuse` saves the index)."""
    memo = DataMemo()
    done: dict[str, JobSummary | Outcome] = {}
    if not store.jobs.is_dir():  # no store yet (or no folder at all: check_writable says so)
        return done
    for job in jobs:
        fingerprint = memo.known(job.config)
        if fingerprint is None:  # only loading the data tells: the executor does
            continue
        if index is None:
            summary = marked(job, JobDir(store, job.id).skipped_summary(fingerprint), keep_stale)
        elif outcome_only and (status := index.lookup(job.id, job_code_stamp(job.config), fingerprint)):
            done[job.id] = Outcome(job.id, status)
            continue
        else:
            summary = _checked(job, store, fingerprint, keep_stale, index)
        if summary is not None:
            done[job.id] = Outcome(job.id, summary.status, summary.stale) if outcome_only else summary
    return done


def _checked(job: Job, store: Store, fingerprint: str, keep_stale: bool, index: DoneIndex) -> JobSummary | None:
    """The full check of a job (its summary, as `done_jobs` reuses it), told to the index when done."""
    before, _ = signature(index.folder(job.id))
    summary = marked(job, JobDir(store, job.id).skipped_summary(fingerprint), keep_stale)
    if summary is not None:
        parts = summary.code_parts
        index.verified(job.id, before, summary, code_stamp(parts) if isinstance(parts, dict) else NONE)
    return summary


def still_done(store: Store, done: dict[str, JobSummary | Outcome]) -> dict[str, JobSummary | Outcome]:
    """`done` without the jobs whose folder was set aside since (MLflow's healing parses every record of
    a job it mirrors, and sets aside a damaged one for the run to train again)."""
    return {job_id: summary for job_id, summary in done.items() if JobDir(store, job_id).summary.exists()}


def reuse(store: Store, suite: str, done: dict, index: DoneIndex | None = None) -> None:
    """Link the `done` jobs into the suite's view (those not there yet: one listing of the view), remove
    the temp files a killed write left in their folders (but in those the index found unchanged, which
    it indexed without any), and save what the index learnt."""
    linked = _names(store.suite(suite).path)
    unchanged = index.hits if index is not None else set()
    for job_id in done:
        if job_id not in linked:
            link_into_suite(store, suite, job_id)
        if job_id not in unchanged:
            _tidy(store, JobDir(store, job_id))
    if index is not None:
        index.save()


def _names(folder: Path) -> set[str]:
    try:
        return set(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return set()


def _tidy(store: Store, jobdir: JobDir) -> None:
    """Temp files a killed write left in a done job's folder go, under its lock (a live writer holds it);
    a listing finds them, so the lock is taken only where there are some."""
    if not any(TEMP_NAME.match(name) for name in _names(jobdir.path)):  # (gone: set aside by another process)
        return
    lock = job_lock(store, jobdir.path.name)
    if lock.acquire(blocking=False):  # held: another process is at it, and tidies after itself
        try:
            jobdir.remove_stale_temps()
        finally:
            lock.release()
