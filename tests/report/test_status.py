"""`fedbench status`: states, rounds, accuracy and ETA read from results on disk — from files made
by hand, and for real while another process runs the suite and after it is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from fedtest import REPO, tiny_suite, write_suite

from benchmark.cli import main
from benchmark.report import status
from benchmark.report.status import suite_status
from benchmark.store.job_dir import JobDir, atomic_write_json
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs


def _heartbeat(pid: int, round_: int, started: float, updated: float, rounds: int = 20) -> dict:
    return {
        "pid": pid,
        "host": os.uname().nodename,
        "rounds": rounds,
        "start_round": 0,
        "started": started,
        "updated": updated,
        "round": round_,
        "test_acc": 41.5,
        "ema_acc": 40.0,
    }


def test_every_state_with_rounds_accuracy_and_eta(tmp_path, capsys, monkeypatch):
    suite = tiny_suite(methods=["fedavg", "fedavgm", "fedprox", "fedacg", "fedadam"])
    suite["defaults"]["rounds"] = 20
    path = write_suite(tmp_path, suite)
    results = tmp_path / "results"
    assert main(["run", str(path), "--no-tracking", "--results-dir", str(results), "--only", "FedAvg", "-q"]) == 0
    _, jobs = load_jobs(path)
    dirs = {j.method_label: JobDir(Store(results), j.id) for j in jobs}
    done = json.loads(dirs["FedAvg"].summary.read_text())
    now = time.time()
    # running: a live process (this one) 10 rounds in after 20 s -> 2 s/round, 10 rounds left
    atomic_write_json(dirs["FedAvgM"].heartbeat, _heartbeat(os.getpid(), 10, now - 20, now))
    # killed mid-run: a heartbeat whose process is gone, metrics up to round 6 and a checkpoint
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    atomic_write_json(dirs["FedProx"].heartbeat, _heartbeat(dead.pid, 6, now - 12, now - 1))
    dirs["FedProx"].write_metrics([{"round": r, "test_acc": 30.0 + r, "ema_acc": 30.0} for r in range(1, 7)])
    dirs["FedProx"].checkpoint.write_bytes(b"")
    atomic_write_json(
        dirs["FedACG"].summary, {"status": "failed", "error": "RuntimeError: boom", "rounds_completed": 3}
    )

    by_method = {s.job.method_label: s for s in suite_status(jobs, Store(results))}
    assert by_method["FedAvg"].state == "done" and by_method["FedAvg"].acc == done["final_acc"]
    running = by_method["FedAvgM"]
    assert (running.state, running.rounds_done, running.acc) == ("running", 10, 41.5)
    assert abs(running.eta_s - 10 * 2.0) < 0.1
    interrupted = by_method["FedProx"]
    assert (interrupted.state, interrupted.rounds_done, interrupted.acc) == ("pending", 6, 36.0)
    assert "resumes from its checkpoint" in interrupted.note
    done_per_round = done["wall_time_s"] / 20  # no own measurement: median over the same dataset's jobs
    assert abs(interrupted.eta_s - 14 * (done_per_round + 2.0) / 2) < 0.01
    assert by_method["FedACG"].state == "failed" and by_method["FedACG"].acc is None
    assert by_method["FedAdam"].state == "pending" and by_method["FedAdam"].rounds_done == 0

    assert main(["status", str(path), "--results-dir", str(results)]) == 0
    out = capsys.readouterr().out
    assert "1 done, 1 running, 1 failed, 0 diverged, 2 pending" in out and "RuntimeError: boom" in out

    # a larger suite (seeds 0 and 1: 10 jobs) is summed up per dataset and method, its failed jobs
    # listed under it; --jobs lists every job all the same
    monkeypatch.setattr(status, "LISTED_UP_TO", 4)
    assert main(["status", str(path), "--results-dir", str(results), "--seeds", "0,1"]) == 0
    out = capsys.readouterr().out
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines() if line.count("│") > 9]
    assert len(rows) == 5 and not any(j.id in out for j in jobs if j.method_label != "FedACG")
    # FedAvgM: seed 0 running (10 rounds left at 2 s), seed 1 pending (20 rounds at the same 2 s)
    assert ["synthetic", "FedAvgM", "2", "-", "1", "-", "-", "1", "1m00s"] in rows
    failed = next(j for j in jobs if j.method_label == "FedACG")
    assert f"failed: {failed.id} synthetic / FedACG / seed 0: RuntimeError: boom" in out
    assert main(["status", str(path), "--results-dir", str(results), "--seeds", "0,1", "--jobs"]) == 0
    listed = capsys.readouterr().out
    assert all(j.id in listed for j in jobs)


def test_status_of_a_run_in_another_process_and_after_it_is_killed(tmp_path):
    suite = tiny_suite(methods=["fedavg"])
    suite["defaults"].update(rounds=100000, checkpoint_every=200)
    path = write_suite(tmp_path, suite)
    results = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmark",
            "run",
            str(path),
            "--no-tracking",
            "--threads",
            "1",
            "--results-dir",
            str(results),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, jobs = load_jobs(path)
    try:
        deadline = time.time() + 120
        while True:
            [status] = suite_status(jobs, Store(results))
            if status.state == "running" and status.rounds_done >= 400 and status.sec_per_round:
                break
            assert run.poll() is None and time.time() < deadline, "the run never showed up as running"
            time.sleep(0.5)
        assert status.eta_s > 0 and "pid" in status.note
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
    [status] = suite_status(jobs, Store(results))
    assert status.state == "pending" and status.rounds_done >= 200
    assert "interrupted" in status.note and "resumes from its checkpoint" in status.note
