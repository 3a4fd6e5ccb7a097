"""How far a round has come reaches its listener through a queue (run/feed.py): in order, on a thread other
than the one that trains, every count before the job's end, and past a listener that fails."""

from __future__ import annotations

import threading

from fedtest import tiny_suite, write_suite

from benchmark.run.feed import fed
from benchmark.run.job_runner import run_job
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs


def test_a_jobs_counts_reach_the_listener_on_another_thread_all_before_run_job_returns(tmp_path):
    _, (job,) = load_jobs(write_suite(tmp_path, tiny_suite(methods=["fedavg"])))
    heard = []
    summary = run_job(
        job,
        "s",
        JobDir(Store(tmp_path / "results"), job.id),
        on_clients=lambda d: heard.append((d, threading.current_thread())),
    )
    assert summary.status == "finished"
    assert heard and all(thread is not threading.main_thread() for _, thread in heard)
    rounds = [d.round for d, _ in heard]
    assert rounds == sorted(rounds) and set(rounds) == set(range(1, job.config.rounds + 1))
    last = [d for d, _ in heard if d.round == job.config.rounds][-1]
    assert last.done == last.total  # the last round's last client, heard before run_job returned


def test_a_listener_that_fails_is_logged_and_hears_the_counts_after(caplog):
    heard = []

    def listener(n):
        if n == 1:
            raise RuntimeError("the display broke")
        heard.append(n)

    with fed(listener) as put:
        for n in range(4):
            put(n)
    assert heard == [0, 2, 3]
    assert "the display broke" in caplog.text


def test_without_a_listener_there_is_nothing_to_put():
    with fed(None) as put:
        assert put is None
