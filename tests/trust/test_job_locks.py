"""Per-job locks: a held job is left for last and waited for; a killed holder frees it."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading

from fedtest import tiny_suite, write_suite

from benchmark.run.executor import run_jobs
from benchmark.store.job_dir import JobDir
from benchmark.store.job_store import job_lock
from benchmark.store.layout import Store
from benchmark.store.locks import FileLock
from benchmark.suite.expand import load_jobs


def test_a_lock_is_exclusive_between_open_files(tmp_path):
    a, b = FileLock(tmp_path / "x.lock"), FileLock(tmp_path / "x.lock")
    assert a.acquire(blocking=False) and not b.acquire(blocking=False)
    a.release()
    assert b.acquire(blocking=False)
    b.release()


def test_sigkilled_holder_frees_the_lock(tmp_path):
    path = tmp_path / "job.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time; f = open(sys.argv[1], 'w'); fcntl.flock(f, fcntl.LOCK_EX); "
            "print('held', flush=True); time.sleep(600)",
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    assert not FileLock(path).acquire(blocking=False)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert FileLock(path).acquire(blocking=False)


def run_with_first_job_held(tmp_path, monkeypatch, other_finishes_it: bool):
    """run_jobs while another "process" holds the first job's lock and releases it during the
    second job, having finished the first job or not; returns (jobs, training order, summaries)."""
    import benchmark.run.executor as executor

    _, jobs = load_jobs(write_suite(tmp_path, tiny_suite()))
    first, second = jobs
    elsewhere = job_lock(Store(tmp_path / "r"), first.id)
    assert elsewhere.acquire()
    train, order = executor.run_job, []

    def recording(job, suite, jobdir, *args, **kwargs):
        order.append(job.id)
        if job.id == second.id:
            if other_finishes_it:
                train(first, "tiny", JobDir(Store(tmp_path / "r"), first.id))
            threading.Timer(0.2, elsewhere.release).start()
        return train(job, suite, jobdir, *args, **kwargs)

    monkeypatch.setattr(executor, "run_job", recording)
    return jobs, order, run_jobs(jobs, "tiny", Store(tmp_path / "r"))


def test_a_job_finished_elsewhere_while_held_is_waited_for_then_skipped(tmp_path, monkeypatch):
    (first, second), order, summaries = run_with_first_job_held(tmp_path, monkeypatch, other_finishes_it=True)
    assert order == [second.id]  # the held job was left for last, and not trained a second time
    assert summaries[first.id].skipped and summaries[first.id].status == "finished"
    assert list(summaries) == [first.id, second.id]


def test_a_job_abandoned_by_its_holder_is_trained_after_the_wait(tmp_path, monkeypatch):
    (first, second), order, summaries = run_with_first_job_held(tmp_path, monkeypatch, other_finishes_it=False)
    assert order == [second.id, first.id]
    assert all(s.status == "finished" and not s.skipped for s in summaries.values())
