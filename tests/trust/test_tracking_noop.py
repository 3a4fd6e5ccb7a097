"""A `run` with nothing to train into a store that already mirrors the suite makes no MLflow call, not even
MLflow's import (run/mlflow_in_sync.py); any change it cannot vouch for sends it to the store as before.
A fresh tracked run's first job does not wait for the store, which opens beside it (run/tracking.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from benchmark.run import mlflow_in_sync
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

mlflow = pytest.importorskip("mlflow")
REPO = Path(__file__).resolve().parents[2]
SUITE = """\
name: tiny
defaults:
  rounds: 3
  num_clients: 6
  participation: {rate: 0.5}
  local: {epochs: 1, batch_size: 8, lr: 0.05}
  model: {name: logistic}
datasets:
  - name: synthetic
    params: {num_users: 6, dim: 10, num_classes: 3, max_samples: 60}
    split: {kind: natural}
methods: [fedavg, fedacg]
"""
PROBE = """\
import sys
from benchmark.cli import main
code = main(sys.argv[1:])
print("MLFLOW IMPORTED", "mlflow" in sys.modules)
sys.exit(code)
"""


def fedbench_run(tmp_path: Path) -> tuple[subprocess.CompletedProcess, bool]:
    """`fedbench run` of the suite in a fresh process: (its outcome, whether it imported MLflow)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "FEDBENCH_CACHE": str(tmp_path / "cache")}
    args = ["run", "suite.yaml", "--results-dir", "results", "--tracking-uri", "sqlite:///store.db", "-q"]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("MLFLOW IMPORTED ")]
    return done, line.endswith("True")


def job_runs(tmp_path: Path) -> dict[str, list]:
    client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path / 'store.db'}")
    experiment = client.get_experiment_by_name("tiny")
    runs = client.search_runs([experiment.experiment_id], "tags.`fedbench.kind` = 'job'")
    by_job: dict[str, list] = {}
    for r in runs:
        by_job.setdefault(r.data.tags["fedbench.job_id"], []).append(r)
    return by_job


@pytest.fixture
def mirrored(tmp_path):
    """A suite trained by a tracked run: its store mirrors it whole."""
    (tmp_path / "suite.yaml").write_text(SUITE)
    ran, imported = fedbench_run(tmp_path)
    assert imported and (tmp_path / "results" / "tiny" / ".mlflow-mirrored").is_file()
    return tmp_path


def test_a_noop_run_into_a_store_that_mirrors_the_suite_imports_no_mlflow(mirrored):
    store = (mirrored / "store.db").read_bytes()
    ran, imported = fedbench_run(mirrored)
    assert not imported
    assert "MLflow: sqlite:///store.db" in ran.stdout and "/#/experiments/1/runs" in ran.stdout
    assert (mirrored / "store.db").read_bytes() == store  # nothing written
    assert "FedACG" in ran.stdout  # the result tables as always


def delete_a_job_run(folder: Path) -> None:
    client = mlflow.tracking.MlflowClient(f"sqlite:///{folder / 'store.db'}")
    client.delete_run(next(iter(job_runs(folder).values()))[0].info.run_id)


def rewrite_a_summary(folder: Path) -> None:
    summary = next((folder / "results" / "jobs").glob("*/summary.json"))
    copy = summary.with_name("copy")
    copy.write_bytes(summary.read_bytes())
    copy.replace(summary)  # the same content, another file (as a rerun or a restore writes it)


def edit_the_suite_file(folder: Path) -> None:
    with open(folder / "suite.yaml", "a") as f:
        f.write("# edited\n")


def garble_the_mark(folder: Path) -> None:
    (folder / "results" / "tiny" / ".mlflow-mirrored").write_text('{"version": 1, "experiment_id": "1"')


def remove_the_mark(folder: Path) -> None:
    (folder / "results" / "tiny" / ".mlflow-mirrored").unlink()


@pytest.mark.parametrize(
    "change", [delete_a_job_run, rewrite_a_summary, edit_the_suite_file, garble_the_mark, remove_the_mark]
)
def test_whatever_the_mark_cannot_vouch_for_is_checked_in_the_store(mirrored, change):
    change(mirrored)
    ran, imported = fedbench_run(mirrored)
    assert imported and "Traceback" not in ran.stderr
    _, jobs = load_jobs(mirrored / "suite.yaml")
    runs = job_runs(mirrored)
    assert sorted(runs) == sorted(job.id for job in jobs)  # a deleted run healed: one run per job
    assert all(len(r) == 1 and r[0].data.tags["fedbench.status"] == "finished" for r in runs.values())
    ran, imported = fedbench_run(mirrored)  # the check left a new mark
    assert not imported


def test_a_run_that_trains_leaves_a_mark_only_for_what_it_mirrored(mirrored):
    """Jobs trained without tracking are new to the store: the next tracked run mirrors them."""
    (mirrored / "suite.yaml").write_text(SUITE.replace("[fedavg, fedacg]", "[fedavg, fedacg, fedprox]"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "FEDBENCH_CACHE": str(mirrored / "cache")}
    untracked = [sys.executable, "-m", "benchmark", "run", "suite.yaml", "--results-dir", "results", "--no-tracking"]
    subprocess.run(untracked, cwd=mirrored, env=env, check=True, capture_output=True, timeout=600)
    ran, imported = fedbench_run(mirrored)
    assert imported and len(job_runs(mirrored)) == 3


def test_only_a_local_sqlite_store_can_be_vouched_for(tmp_path):
    assert mlflow_in_sync.state("http://127.0.0.1:5000", Store(tmp_path), [], None, {}) is None
    assert mlflow_in_sync.state(f"sqlite:///{tmp_path / 'absent.db'}", Store(tmp_path), [], None, {}) is None
    assert mlflow_in_sync.mirrored_experiment(tmp_path / "mark", None) is None


def test_the_first_job_trains_before_the_store_is_open(tmp_path, monkeypatch, mlflow_store):
    """The store opens in the writer thread: here it is held shut until a job has finished (a run that
    waited for the store before its first job would never get there, and the hold gives up)."""
    from benchmark.cli import main
    from benchmark.run.tracking import MlflowTracker

    (tmp_path / "suite.yaml").write_text(SUITE)
    results, opened_after_a_job = tmp_path / "results", []
    connect = MlflowTracker._connect

    def held_shut(self):
        finished = threading.Event()
        for _ in range(600):  # at most a minute: only a run that never trains first waits that long
            if list((results / "jobs").glob("*/summary.json")):
                finished.set()
                break
            finished.wait(0.1)
        opened_after_a_job.append(finished.is_set())
        connect(self)

    monkeypatch.setattr(MlflowTracker, "_connect", held_shut)
    uri = mlflow_store()
    assert main(["run", str(tmp_path / "suite.yaml"), "--results-dir", str(results), "--tracking-uri", uri]) == 0
    assert opened_after_a_job == [True]
    client = mlflow.tracking.MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("tiny").experiment_id], "tags.`fedbench.kind` = 'job'")
    assert sorted(r.data.tags["fedbench.status"] for r in runs) == ["finished", "finished"]
    mark = json.loads((results / "tiny" / ".mlflow-mirrored").read_text())
    assert mark["store"] == str(tmp_path / "store.db")
