"""Several `fedbench run` processes on one suite, results folder and MLflow store; killed ones."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from fedtest import REPO, tiny_suite, write_suite

from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

mlflow = pytest.importorskip("mlflow")
COUNTING_RUN = Path(__file__).with_name("counting_run.py")


def start(tmp_path: Path, suite: Path, *extra: str) -> subprocess.Popen:
    """`fedbench run` in a fresh process, counting the jobs it trains in tmp_path/trained.log."""
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [
        sys.executable,
        str(COUNTING_RUN),
        str(tmp_path / "trained.log"),
        "run",
        str(suite),
        "--results-dir",
        str(tmp_path / "results"),
        "--tracking-uri",
        f"sqlite:///{tmp_path / 'store.db'}",
        "--threads",
        "1",
        *extra,
    ]
    return subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def trained(tmp_path: Path) -> Counter:
    log = tmp_path / "trained.log"
    return Counter(line.split()[1] for line in log.read_text().splitlines()) if log.exists() else Counter()


def runs_of(tmp_path: Path, suite: str = "tiny") -> tuple[list, list]:
    client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path / 'store.db'}")
    runs = client.search_runs([client.get_experiment_by_name(suite).experiment_id])
    kind = lambda k: [r for r in runs if r.data.tags.get("fedbench.kind") == k]  # noqa: E731
    return kind("suite"), kind("job")


@pytest.mark.slow  # three fresh processes (torch + MLflow imports): ~40 s on a busy 2-core machine
def test_processes_started_together_on_a_new_store_train_each_job_once(tmp_path):
    raw = tiny_suite()
    raw["defaults"]["seeds"] = [0, 1]
    suite = write_suite(tmp_path, raw)
    procs = [start(tmp_path, suite) for _ in range(3)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, err
        assert "Traceback" not in err
    _, jobs = load_jobs(suite)
    assert trained(tmp_path) == Counter({j.id: 1 for j in jobs})
    parents, children = runs_of(tmp_path)
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert sorted(c.data.tags["fedbench.job_id"] for c in children) == sorted(j.id for j in jobs)
    assert all(
        c.info.status == "FINISHED" and c.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for c in children
    )


def long_suite(tmp_path: Path) -> tuple[Path, str, JobDir]:
    raw = tiny_suite(methods=["fedavg", "fedacg"])
    raw["defaults"].update(rounds=600, checkpoint_minutes=0.002, eval_every=1)  # a checkpoint every ~0.1 s
    path = write_suite(tmp_path, raw)
    _, jobs = load_jobs(path)
    return path, jobs[0].id, JobDir(Store(tmp_path / "results"), jobs[0].id)


def wait_for(condition, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.1)


@pytest.mark.slow
def test_sigkilled_run_leaves_no_stuck_lock_and_its_job_continues_its_own_run(tmp_path, monkeypatch):
    monkeypatch.setenv("LIVE_RUNS", "1")  # the job's run made as it starts, as a job running past LIVE_AFTER_S
    path, job_id, jobdir = long_suite(tmp_path)
    victim = start(tmp_path, path)
    wait_for(lambda: jobdir.checkpoint.exists())
    _, children = runs_of(tmp_path)
    (killed_run,) = children
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert runs_of(tmp_path)[1][0].info.status == "RUNNING"  # nobody could close it

    # another job only: the killed job's run is closed on start, its lock is free
    other = start(tmp_path, path, "--only", "FedACG", "--stop-after", "3")
    _, err = other.communicate(timeout=300)
    assert other.returncode == 0, err
    by_job = {c.data.tags["fedbench.job_id"]: c for c in runs_of(tmp_path)[1]}
    assert by_job[job_id].info.status == "KILLED"

    # the killed job resumes from its checkpoint into its own MLflow run
    resumed = start(tmp_path, path, "--only", "FedAvg", "--stop-after", "600")
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    parents, children = runs_of(tmp_path)
    assert len(parents) == 1 and len(children) == 2
    run = next(c for c in children if c.data.tags["fedbench.job_id"] == job_id)
    assert run.info.run_id == killed_run.info.run_id and run.info.status == "FINISHED"
    client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path / 'store.db'}")
    steps = [m.step for m in client.get_metric_history(run.info.run_id, "test_acc")]
    assert sorted(steps) == list(range(1, 601))  # every round once: no duplicates from the replay
    assert jobdir.read_summary().status == "finished"
    assert trained(tmp_path)[job_id] == 2  # the killed attempt and the resume, never in parallel
