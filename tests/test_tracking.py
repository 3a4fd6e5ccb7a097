"""MLflow mirror: one parent run per invocation, a child per job with params, per-round metrics, artifacts."""

from __future__ import annotations

import pytest

from benchmark.cli import main
from fedtest import tiny_suite, write_suite

mlflow = pytest.importorskip("mlflow")


def test_parent_and_child_runs_in_a_sqlite_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    suite = write_suite(tmp_path, tiny_suite())
    assert main(["run", str(suite), "--tracking-uri", uri, "--results-dir", str(tmp_path / "results")]) == 0

    client = mlflow.tracking.MlflowClient(uri)
    exp = client.get_experiment_by_name("tiny")
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if r.data.tags.get("fedbench.kind") == "suite"]
    children = [r for r in runs if r.data.tags.get("fedbench.kind") == "job"]
    assert len(parents) == 1 and len(children) == 2
    for child in children:
        assert child.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
        assert child.info.status == "FINISHED"
        assert child.data.params["local.lr"] == "0.05" and "method.server.rule" in child.data.params
        history = client.get_metric_history(child.info.run_id, "test_acc")
        assert [m.step for m in history] == [1, 2, 3, 4]
        artifacts = {a.path for a in client.list_artifacts(child.info.run_id)}
        assert {"summary.json", "metrics.jsonl", "config.json"} <= artifacts


def test_env_variable_selects_the_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'env.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    suite = write_suite(tmp_path, tiny_suite(methods=["fedavg"]))
    assert main(["run", str(suite), "--results-dir", str(tmp_path / "results")]) == 0
    assert (tmp_path / "env.db").exists() and not (tmp_path / "mlflow.db").exists()
