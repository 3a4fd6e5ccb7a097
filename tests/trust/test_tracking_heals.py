"""results/ is the source of truth and MLflow heals from it: finished jobs missing or KILLED in MLflow
are mirrored again by the next `run` and by `fedbench sync`, idempotently; tracking time is not
training time; an unreachable tracking server costs seconds, not minutes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fedtest import measured, tiny_suite, write_suite

from benchmark.cli import main
from benchmark.run import mlflow_writer
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

mlflow = pytest.importorskip("mlflow")


def _children(uri: str) -> dict:
    client = mlflow.tracking.MlflowClient(uri)
    exp = client.get_experiment_by_name("tiny")
    runs = client.search_runs([exp.experiment_id], "tags.`fedbench.kind` = 'job'")
    return {r.data.tags["fedbench.job_id"]: r for r in runs}


def _assert_mirrors_disk(uri: str, results, jobs) -> None:
    client = mlflow.tracking.MlflowClient(uri)
    runs = _children(uri)
    assert set(runs) == {j.id for j in jobs}
    experiment = client.get_experiment_by_name("tiny").experiment_id
    assert len(client.search_runs([experiment], "tags.`fedbench.kind` = 'job'")) == len(jobs)  # one run each
    for job in jobs:
        run, jobdir = runs[job.id], JobDir(Store(results), job.id)
        summary = jobdir.read_summary()
        assert run.info.status == "FINISHED" and run.data.tags["fedbench.status"] == "finished"
        assert run.data.metrics["final_acc"] == summary.final_acc
        history = client.get_metric_history(run.info.run_id, "test_acc")
        assert [(m.step, m.value) for m in history] == [(r.round, r.test_acc) for r in jobdir.read_metrics()]


def test_run_and_sync_heal_missing_and_killed_runs_idempotently(tmp_path, mlflow_store):
    path, results, uri = write_suite(tmp_path, tiny_suite()), tmp_path / "r", mlflow_store()
    _, jobs = load_jobs(path)
    base = ["--results-dir", str(results), "--tracking-uri", uri, "-q"]
    assert main(["run", str(path), *base[:2], "--no-tracking", "-q"]) == 0  # e.g. during an outage
    assert main(["run", str(path), *base]) == 0  # every job skipped, and mirrored from results/
    _assert_mirrors_disk(uri, results, jobs)

    client = mlflow.tracking.MlflowClient(uri)
    killed = _children(uri)[jobs[0].id].info.run_id  # a process killed after the summary was written
    client.set_terminated(killed, "KILLED")
    client.delete_tag(killed, "fedbench.status")
    assert main(["sync", str(path), "--results-dir", str(results), "--tracking-uri", uri]) == 0
    _assert_mirrors_disk(uri, results, jobs)
    assert main(["sync", str(path), "--results-dir", str(results), "--tracking-uri", uri]) == 0  # nothing to do
    assert main(["run", str(path), *base]) == 0
    _assert_mirrors_disk(uri, results, jobs)  # no round logged twice, no second run


def test_tracking_time_is_not_training_time(tmp_path, monkeypatch, mlflow_store):
    slow = mlflow.tracking.MlflowClient.log_batch

    def log_batch(self, *args, **kwargs):
        time.sleep(0.5)  # a slow tracking server
        return slow(self, *args, **kwargs)

    monkeypatch.setattr(mlflow.tracking.MlflowClient, "log_batch", log_batch)
    monkeypatch.setattr(mlflow_writer, "LIVE_AFTER_S", 0.0)  # the run written while the job runs, as a long job's
    path, results = write_suite(tmp_path, tiny_suite(methods=["fedavg"])), tmp_path / "r"
    began = time.monotonic()
    assert main(["run", str(path), "--results-dir", str(results), "--tracking-uri", mlflow_store(), "-q"]) == 0
    elapsed = time.monotonic() - began
    [job] = load_jobs(path)[1]
    jobdir = JobDir(Store(results), job.id)
    # params, rounds and the final numbers: at least 3 slow batches inside the job's span
    assert elapsed > 1.5 and jobdir.read_summary().wall_time_s < elapsed - 1.5
    assert jobdir.read_metrics()[-1].wall_s < elapsed - 1.5


def test_report_and_sync_with_an_unreachable_server_take_seconds(tmp_path, capsys):
    path, results = write_suite(tmp_path, tiny_suite(methods=["fedavg"])), str(tmp_path / "r")
    assert main(["run", str(path), "--results-dir", results, "--no-tracking", "-q"]) == 0
    began = time.monotonic()
    assert main(["report", str(path), "--results-dir", results, "--tracking-uri", "http://127.0.0.1:9"]) == 0
    assert main(["sync", str(path), "--results-dir", results, "--tracking-uri", "http://127.0.0.1:9"]) == 2
    assert time.monotonic() - began < 20  # the report and its figures included; no minutes of retries
    err = capsys.readouterr().err
    assert "not attached to MLflow" in err and "unreachable" in err and "Traceback" not in err


KILL = Path(__file__).with_name("kill_at_mlflow.py")


# MLflow's write points. Live (a job's run created when it starts, as for a job running over LIVE_AFTER_S):
# the job's run created (create_run 1 is the suite's), a round's metrics mid-run (the 2nd batch: after the
# parameters), and the end of a job whose summary.json is already written: its dataset (log_inputs), its
# first file (log_artifact 1 is the suite file), its end status (its run left RUNNING with the final numbers
# and status tag, or without them). Batched (a short job's run written after it ends by the writer thread):
# the queued job's batch about to be written, and inside its transaction (its files already copied).
@pytest.mark.parametrize(
    "mode, target, nth",
    [
        ("live", "create_run", 2),
        ("live", "log_batch", 2),
        ("live", "log_inputs", 1),
        ("live", "log_artifact", 2),
        ("live", "set_terminated", 1),
        ("batched", "SqlBatchWriter.write", 1),
        ("batched", "SqlBatchWriter._inputs", 1),
    ],
)
def test_a_kill_at_an_mlflow_write_resumes_and_heals_the_run(tmp_path, mlflow_store, mode, target, nth):
    raw = tiny_suite(methods=["fedacg"])
    raw["defaults"].update(rounds=6, checkpoint_every=2, checkpoint_minutes=0)
    path, uri = write_suite(tmp_path, raw), mlflow_store()
    [job] = load_jobs(path)[1]
    straight = ["run", str(path), "--no-tracking", "--threads", "1", "--results-dir", str(tmp_path / "straight")]
    assert main(straight) == 0
    args = ["run", str(path), "--tracking-uri", uri, "--threads", "1", "-q", "--results-dir", str(tmp_path / "r")]
    killed = subprocess.run([sys.executable, str(KILL), mode, target, str(nth), *args], capture_output=True, text=True)
    assert killed.returncode == 137, killed.stderr
    assert main(args) == 0  # resumes (or skips the finished job) and heals its MLflow run
    _assert_mirrors_disk(uri, tmp_path / "r", [job])
    ran, reference = (JobDir(Store(tmp_path / d), job.id) for d in ("r", "straight"))
    assert measured(ran.read_metrics()) == measured(reference.read_metrics())


@pytest.mark.parametrize("heal", ["run", "sync"])
def test_sigkill_with_finished_jobs_queued_for_mlflow_heals_to_one_run_each(tmp_path, mlflow_store, heal):
    """Every job finished and queued for the writer thread, which is stopped at its first write; then a real
    SIGKILL. The next `run` (nothing to train) or `sync` writes one run per job."""
    path, uri, results = write_suite(tmp_path, tiny_suite()), mlflow_store(), tmp_path / "r"
    _, jobs = load_jobs(path)
    marker = tmp_path / "writing"
    args = ["run", str(path), "--tracking-uri", uri, "--threads", "1", "-q", "--results-dir", str(results)]
    child = subprocess.Popen(
        [sys.executable, str(KILL), "batched", "SqlBatchWriter.write", "1", *args],
        env={**os.environ, "HANG_MARKER": str(marker)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), "the writer never started writing"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert all(
        JobDir(Store(results), j.id).read_summary().status == "finished" for j in jobs
    )  # on disk, whatever MLflow has
    assert _children(uri) == {}  # the queued jobs' runs were never written
    if heal == "run":
        assert main(args) == 0
    else:
        assert main(["sync", str(path), "--results-dir", str(results), "--tracking-uri", uri]) == 0
    _assert_mirrors_disk(uri, results, jobs)
