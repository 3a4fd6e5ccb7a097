"""A FedAc batch that fails or is interrupted: each of its jobs fails with the batch's own error
(computed once), and Ctrl-C or SIGTERM stops the run with nothing recorded as failed, even when it
arrives inside the compiled kernel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from engine.test_fedac_batched import shared_suite
from fedtest import REPO

from benchmark.protocols.fedac import FedAcProtocol
from benchmark.protocols.fedac.signals import HeldSignals
from benchmark.run.executor import run_jobs
from benchmark.run.protocol_batches import ProtocolBatches
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import expand


def _statuses(root, jobs) -> dict[str, str]:
    return {j.id: json.loads(JobDir(Store(root), j.id).summary.read_text())["status"] for j in jobs}


def test_a_failing_batch_fails_each_of_its_jobs_with_its_error_once(tmp_path, monkeypatch):
    jobs = expand(shared_suite("fedavg"))  # one batch: the lr grid
    calls = []

    def boom(self, group):
        calls.append(len(group))
        raise RuntimeError("boom")

    monkeypatch.setattr(FedAcProtocol, "run_batch", boom)
    summaries = run_jobs(jobs, "fedac-batched", Store(tmp_path))
    assert calls == [len(jobs)] and len(jobs) > 1
    errors = [summaries[j.id].error for j in jobs]
    assert errors[0] == "RuntimeError: boom"
    assert set(errors[1:]) == {f"BatchFailed: its batch of {len(jobs)} jobs failed: RuntimeError: boom"}


def test_an_interrupted_batch_records_nothing_and_the_next_run_completes(tmp_path, monkeypatch):
    jobs = expand(shared_suite("fedavg"))
    real = FedAcProtocol.run_batch

    def interrupted(self, group):
        raise KeyboardInterrupt

    monkeypatch.setattr(FedAcProtocol, "run_batch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_jobs(jobs, "fedac-batched", Store(tmp_path))
    assert not any(JobDir(Store(tmp_path), j.id).summary.exists() for j in jobs)  # nothing recorded as failed
    monkeypatch.setattr(FedAcProtocol, "run_batch", real)
    run_jobs(jobs, "fedac-batched", Store(tmp_path))
    assert set(_statuses(tmp_path, jobs).values()) == {"finished"}


def test_an_interrupted_batch_is_computed_afresh_when_a_job_of_it_is_next_due(monkeypatch):
    jobs = expand(shared_suite("fedavg"))
    batches = ProtocolBatches(jobs)
    real, calls = FedAcProtocol.run_batch, []

    def first_interrupted(self, group):
        calls.append(len(group))
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(self, group)

    monkeypatch.setattr(FedAcProtocol, "run_batch", first_interrupted)
    with pytest.raises(KeyboardInterrupt):
        batches.simulation_for(jobs[0])
    assert batches.simulation_for(jobs[0]) is not None and batches.simulation_for(jobs[1]) is not None
    assert calls == [len(jobs), len(jobs)]


def test_a_signal_while_a_batch_computes_is_held_until_delivered(ctrl_c_raises):
    after = []
    with pytest.raises(KeyboardInterrupt):
        with HeldSignals() as held:
            signal.raise_signal(signal.SIGINT)  # as if inside the kernel
            after.append("the call went on")
            held.deliver()
            after.append("not reached")
    assert after == ["the call went on"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is back


def test_a_handler_that_does_not_raise_gets_each_signal_and_the_hold_goes_on():
    got = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
    try:
        with HeldSignals() as held:
            signal.raise_signal(signal.SIGTERM)
            signal.raise_signal(signal.SIGTERM)
            assert got == []
            held.deliver()
            assert got == [signal.SIGTERM]  # once: it asks for one stop
            signal.raise_signal(signal.SIGTERM)
            assert got == [signal.SIGTERM]  # held again
        assert got == [signal.SIGTERM, signal.SIGTERM]  # delivered on leaving
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.slow
def test_sigterm_during_a_batch_stops_the_run_and_it_resumes(tmp_path):
    """SIGTERM while a long batch computes (its first job started, no job written yet)."""
    suite = shared_suite("fedac1", steps=40, clients=64, batch=4, rounds=3000, eval_every=1000)
    path = tmp_path / "suite.yaml"
    path.write_text(json.dumps(suite.model_dump(mode="json", exclude_unset=True)))
    jobs = expand(suite)
    results = tmp_path / "r"
    command = [sys.executable, "-m", "benchmark.cli", "run", str(path), "--results-dir", str(results), "--no-tracking"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    end = time.monotonic() + 120
    while not JobDir(Store(results), jobs[0].id).config.exists():
        assert time.monotonic() < end and proc.poll() is None
        time.sleep(0.05)
    time.sleep(1.0)  # inside the batch's rounds
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "resume with" in err, err
    assert not any(JobDir(Store(results), j.id).summary.exists() for j in jobs)  # none failed, none half-written
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert set(_statuses(results, jobs).values()) <= {"finished", "diverged"}
