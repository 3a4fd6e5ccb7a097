"""MLflow mirrors the results and never fails a job: resumed jobs continue their own run, per-round
metrics carry the time they were measured, tracking errors and unreachable stores only warn."""

from __future__ import annotations

import logging

import pytest
from fedtest import tiny_suite, write_suite

from benchmark.cli import main
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

mlflow = pytest.importorskip("mlflow")


def run(tmp_path, *extra: str, uri: str) -> int:
    suite = write_suite(tmp_path, tiny_suite())
    return main(["run", str(suite), "--results-dir", str(tmp_path / "r"), "--tracking-uri", uri, *extra])


def test_a_resumed_job_continues_its_own_run_with_real_timestamps(tmp_path, mlflow_store):
    uri = mlflow_store()
    assert run(tmp_path, "--stop-after", "2", uri=uri) == 0
    assert run(tmp_path, uri=uri) == 0
    assert run(tmp_path, uri=uri) == 0  # all skipped: no new run of any kind
    client = mlflow.tracking.MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("tiny").experiment_id])
    parents = [r for r in runs if r.data.tags["fedbench.kind"] == "suite"]
    children = [r for r in runs if r.data.tags["fedbench.kind"] == "job"]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED" and len(children) == 2
    _, jobs = load_jobs(tmp_path / "suite.yaml")
    for child in children:
        assert child.info.status == "FINISHED" and child.data.tags["fedbench.status"] == "finished"
        history = client.get_metric_history(child.info.run_id, "test_acc")
        records = JobDir(Store(tmp_path / "r"), child.data.tags["fedbench.job_id"]).read_metrics()
        assert [(m.step, m.timestamp) for m in history] == [(r.round, int(1000 * r.time)) for r in records]


def test_tracking_errors_warn_and_never_fail_a_job(tmp_path, monkeypatch, caplog, mlflow_store):
    def broken(*args, **kwargs):
        raise ConnectionError("tracking server went away")

    monkeypatch.setattr(mlflow.tracking.MlflowClient, "log_batch", broken)
    monkeypatch.setattr(mlflow.tracking.MlflowClient, "log_artifact", broken)
    with caplog.at_level(logging.WARNING):
        assert run(tmp_path, uri=mlflow_store()) == 0
    assert "tracking server went away" in caplog.text and "results on disk are complete" in caplog.text
    _, jobs = load_jobs(tmp_path / "suite.yaml")
    assert all(JobDir(Store(tmp_path / "r"), j.id).read_summary().status == "finished" for j in jobs)


def test_an_unreachable_store_warns_and_the_suite_runs_without_tracking(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # fedbench's 2 retries back off for seconds
    assert run(tmp_path, uri="http://127.0.0.1:9") == 0  # nothing listens on the discard port
    err = capsys.readouterr().err
    assert "running without tracking" in err and "Traceback" not in err
    _, jobs = load_jobs(tmp_path / "suite.yaml")
    assert all(JobDir(Store(tmp_path / "r"), j.id).read_summary().status == "finished" for j in jobs)
