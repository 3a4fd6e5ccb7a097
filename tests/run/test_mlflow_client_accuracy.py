"""A LEAF-style job's per-user accuracy in MLflow: client_acc.json as an artifact of its child run
and summary.json's spread as `client_acc.*` metrics, live and when `sync` mirrors it later; a run
mirrored without them counts as incomplete, so the next heal adds them."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from fedtest import tiny_suite, write_suite

from benchmark.cli import main
from benchmark.run.mlflow_mirror import JobMirror, client_acc_metrics
from benchmark.store.records import summary_from_json
from benchmark.suite.expand import load_jobs

mlflow = pytest.importorskip("mlflow")


def test_client_accuracy_is_an_artifact_and_its_spread_metrics_live_and_synced(tmp_path, mlflow_store):
    suite = write_suite(tmp_path, tiny_suite(methods=["fedavg"]))  # synthetic natural split: users named
    (job,) = load_jobs(suite)[1]
    results = tmp_path / "results"
    folder = results / "tiny" / job.id
    for store, command in (("live.db", "run"), ("synced.db", "sync")):
        uri = mlflow_store(store)
        assert main([command, str(suite), "--results-dir", str(results), "--tracking-uri", uri]) == 0
        client = mlflow.tracking.MlflowClient(uri)
        (run,) = client.search_runs(
            [client.get_experiment_by_name("tiny").experiment_id], "tags.`fedbench.kind` = 'job'"
        )
        into = tmp_path / f"{store}.artifacts"
        into.mkdir()
        logged = client.download_artifacts(run.info.run_id, "client_acc.json", str(into))
        assert json.loads(open(logged).read()) == json.loads((folder / "client_acc.json").read_text())
        spread = json.loads((folder / "summary.json").read_text())["client_acc"]
        assert {k: run.data.metrics[f"client_acc.{k}"] for k in spread} == spread
        assert {"client_acc.p10", "client_acc.p50", "client_acc.p90"} <= run.data.metrics.keys()


def test_a_run_without_the_spread_of_a_summary_that_has_it_is_incomplete():
    summary = summary_from_json(
        json.loads('{"status": "finished", "client_acc": {"p10": 20, "p50": 50, "p90": 80, "mean": 50, "clients": 3}}')
    )

    def run(metrics: dict):
        return SimpleNamespace(
            data=SimpleNamespace(tags={"fedbench.status": "finished"}, metrics=metrics),
            info=SimpleNamespace(status="FINISHED"),
        )

    assert not JobMirror.is_complete(run({"final_acc": 50.0}), summary)
    assert JobMirror.is_complete(run({"final_acc": 50.0, **client_acc_metrics(summary)}), summary)
    no_users = summary_from_json({"status": "finished"})  # no per-user accuracy: none due
    assert JobMirror.is_complete(run({"final_acc": 50.0}), no_users)
