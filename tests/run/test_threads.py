"""torch's CPU thread count: `--threads` reaches torch and summary.json; without it, one thread per CPU job."""

from __future__ import annotations

import json

import torch
from fedtest import tiny_suite, write_suite

from benchmark.cli import main
from benchmark.run.threads import DEFAULT
from benchmark.store.layout import Store


def summaries(results) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(results.glob("tiny/*/summary.json"))]


def test_threads_flag_reaches_torch_and_the_summary(tmp_path):
    before = torch.get_num_threads()
    path, results = write_suite(tmp_path, tiny_suite(methods=["fedavg"])), tmp_path / "results"
    try:
        assert main(["run", str(path), "--no-tracking", "--results-dir", str(results), "--threads", "3"]) == 0
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)
    assert [s["threads"] for s in summaries(results)] == [{"count": 3, "chosen_by": "--threads"}]


def test_without_the_flag_every_cpu_job_trains_at_one_thread(tmp_path):
    path, results = write_suite(tmp_path, tiny_suite()), tmp_path / "results"
    before = torch.get_num_threads()
    try:
        assert main(["run", str(path), "--no-tracking", "--results-dir", str(results)]) == 0
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    assert [s["threads"] for s in summaries(results)] == [DEFAULT, DEFAULT]


def test_the_default_count_does_not_follow_the_load_the_clock_or_the_cores(tmp_path, monkeypatch):
    """The same run on the same machine trains at the same count, whatever the moment: a 64-core
    machine at load 50, whose clock says each thing timed took half as long as the one before (the
    load lifting while a probe measures, which made the old probe choose every core), chooses as an
    idle one does."""
    import os
    import time

    chosen = []
    before = torch.get_num_threads()
    try:
        for moment in ("loaded", "idle"):  # loaded first: nothing chosen earlier in this process is reused
            monkeypatch.undo()
            if moment == "loaded":
                monkeypatch.setattr(os, "getloadavg", lambda: (50.0, 50.0, 50.0))
                monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
                monkeypatch.setattr(os, "cpu_count", lambda: 64)
                readings = (20.0 * (1 - 0.5**n) for n in range(10**6))
                monkeypatch.setattr(time, "perf_counter", lambda: next(readings))
            (tmp_path / moment).mkdir()
            path, results = write_suite(tmp_path / moment, tiny_suite(methods=["fedavg"])), tmp_path / moment / "r"
            assert main(["run", str(path), "--no-tracking", "--results-dir", str(results)]) == 0
            chosen += [s["threads"] for s in summaries(results)]
    finally:
        torch.set_num_threads(before)
    assert chosen == [DEFAULT, DEFAULT]


def test_zero_threads_is_a_clear_error(tmp_path, capsys):
    path = write_suite(tmp_path, tiny_suite())
    assert main(["run", str(path), "--no-tracking", "--results-dir", str(tmp_path), "--threads", "0"]) == 2
    assert "--threads" in capsys.readouterr().err


def test_the_batched_fedac_engine_runs_at_one_thread_unless_told(tmp_path, monkeypatch):
    from engine.test_fedac_batched import shared_suite
    from threadpoolctl import threadpool_info, threadpool_limits

    from benchmark.protocols.fedac import FedAcProtocol
    from benchmark.run import threads
    from benchmark.run.job_runner import run_job
    from benchmark.run.protocol_batches import ProtocolBatches
    from benchmark.store.job_dir import JobDir
    from benchmark.suite.expand import expand

    before = max(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas")
    try:
        for requested, expected in [(None, FedAcProtocol.threads), (2, {"count": 2, "chosen_by": "--threads"})]:
            threads.request(requested)
            jobs = expand(shared_suite("fedac1", lrs=[0.05]))
            batched = ProtocolBatches(jobs)
            summary = run_job(
                jobs[0],
                "s",
                JobDir(Store(tmp_path / str(requested)), jobs[0].id),
                simulation_for=batched.simulation_for,
            )
            blas = {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}
            assert summary.threads == expected and blas == {expected["count"]}  # numpy's products (no torch)
    finally:
        threads.request(None)
        threadpool_limits(before, user_api="blas")


def test_a_batchs_count_is_set_once_and_recorded_by_each_of_its_jobs(tmp_path, monkeypatch):
    """The batch is computed at its protocol's count; its replayed jobs record that count without setting it
    again (threadpoolctl's limits scan the loaded libraries: 13 calls cost a 13-η cell ~10 ms)."""
    from engine.test_fedac_batched import shared_suite

    from benchmark.protocols.fedac import FedAcProtocol
    from benchmark.run.job_runner import run_job
    from benchmark.run.protocol_batches import ProtocolBatches
    from benchmark.store.job_dir import JobDir
    from benchmark.suite.expand import expand

    calls = []
    monkeypatch.setattr(FedAcProtocol, "use_threads", lambda self, count: calls.append(count))
    jobs = expand(shared_suite("fedac1", lrs=[0.01, 0.05, 0.1]))
    batched = ProtocolBatches(jobs)
    store = Store(tmp_path / "results")
    summaries = [run_job(job, "s", JobDir(store, job.id), simulation_for=batched.simulation_for) for job in jobs]
    assert calls == [FedAcProtocol.threads["count"]]
    assert [s.threads for s in summaries] == [FedAcProtocol.threads] * 3
