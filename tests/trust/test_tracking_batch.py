"""Short jobs' MLflow runs written in batches by the writer thread (run/mlflow_writer.py, run/mlflow_batch.py)
read back exactly as runs written call by call while the job runs; a store whose schema the batch writer
was not checked against is written call by call; long jobs still get their run while they run."""

from __future__ import annotations

import time

import pytest

from benchmark.cli import main
from benchmark.run import mlflow_batch, mlflow_writer
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store

mlflow = pytest.importorskip("mlflow")

SUITE = """\
name: tiny
defaults:
  rounds: 3
  num_clients: 4
  local: {epochs: 1, batch_size: 8, lr: 0.05}
  model: {name: logistic}
  log_model: true
datasets:
  - name: synthetic
    params: {num_users: 4, dim: 10, num_classes: 3, max_samples: 40}
    split: {kind: natural}
methods: [fedavg, fedprox]
"""


def ran(tmp_path, uri: str, results: str) -> dict:
    """`fedbench run` of SUITE into `results` and `uri`; job id -> its run, read back through MlflowClient."""
    suite = tmp_path / "tiny.yaml"
    suite.write_text(SUITE)
    assert main(["run", str(suite), "--results-dir", str(tmp_path / results), "--tracking-uri", uri, "-q"]) == 0
    client = mlflow.tracking.MlflowClient(uri)
    experiment = client.get_experiment_by_name("tiny").experiment_id
    runs = client.search_runs([experiment], "tags.`fedbench.kind` = 'job'")
    assert len(runs) == 2  # one run a job
    return {r.data.tags["fedbench.job_id"]: r for r in runs}


def readable(client, run) -> dict:
    """What a reader of the run sees, less what differs between two runs of one job (ids, clocks, paths)."""
    metrics = {k: v for k, v in run.data.metrics.items() if k != "wall_time_s"}  # each run's own seconds
    history = {k: [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, k)] for k in metrics}
    return {
        "name": run.info.run_name,
        "status": run.info.status,
        "stage": run.info.lifecycle_stage,
        "user": run.info.user_id,
        "ended": run.info.end_time is not None and run.info.end_time >= run.info.start_time,
        "tags": {k: v for k, v in run.data.tags.items() if k != "mlflow.parentRunId"},
        "params": run.data.params,
        "metrics": metrics,
        "history": history,
        "inputs": [(d.dataset.name, d.dataset.digest, d.dataset.source) for d in run.inputs.dataset_inputs],
        "artifacts": artifact_sizes(client, run.info.run_id).keys(),
    }


def artifact_sizes(client, run_id: str, folder: str | None = None) -> dict[str, int]:
    sizes = {}
    for f in client.list_artifacts(run_id, folder):
        sizes |= artifact_sizes(client, run_id, f.path) if f.is_dir else {f.path: f.file_size}
    return sizes


def test_a_batch_written_run_reads_as_one_written_call_by_call(tmp_path, monkeypatch, mlflow_store):
    batched_uri, live_uri = mlflow_store("batched.db"), mlflow_store("live.db")
    batched = ran(tmp_path, batched_uri, "r1")
    monkeypatch.setattr(mlflow_writer, "LIVE_AFTER_S", 0.0)  # every run created as its job starts
    live = ran(tmp_path, live_uri, "r2")
    assert batched.keys() == live.keys()
    for job_id in live:
        seen = readable(mlflow.tracking.MlflowClient(batched_uri), batched[job_id])
        assert seen == readable(mlflow.tracking.MlflowClient(live_uri), live[job_id])
        jobdir = JobDir(Store(tmp_path / "r1"), job_id)
        assert seen["status"] == "FINISHED" and "model/final_model.pt" in seen["artifacts"]
        on_disk = {f.name: f.stat().st_size for f in jobdir.mirrored_files} | {
            "model/final_model.pt": jobdir.model.stat().st_size
        }
        assert artifact_sizes(mlflow.tracking.MlflowClient(batched_uri), batched[job_id].info.run_id) == on_disk
        records = jobdir.read_metrics()
        assert seen["history"]["test_acc"] == [(r.round, r.test_acc) for r in records]
    # the store's own queries find them: by tag, param and metric, and under the suite's parent
    client = mlflow.tracking.MlflowClient(batched_uri)
    experiment = client.get_experiment_by_name("tiny").experiment_id
    [parent] = client.search_runs([experiment], "tags.`fedbench.kind` = 'suite'")
    query = f"tags.`mlflow.parentRunId` = '{parent.info.run_id}' and params.rounds = '3' and metrics.final_acc > 0"
    assert {r.info.run_id for r in client.search_runs([experiment], query)} == {r.info.run_id for r in batched.values()}


def test_a_store_of_another_schema_is_written_call_by_call(tmp_path, monkeypatch, mlflow_store):
    monkeypatch.setattr(mlflow_batch, "TESTED_SCHEMAS", frozenset())
    uri = mlflow_store()
    runs = ran(tmp_path, uri, "r")
    for job_id, run in runs.items():
        assert run.info.status == "FINISHED" and run.data.tags["fedbench.status"] == "finished"
        assert run.data.metrics["final_acc"] == JobDir(Store(tmp_path / "r"), job_id).read_summary().final_acc


def test_the_installed_mlflow_schema_is_one_the_batch_writer_was_checked_against(mlflow_store):
    """Upgrading MLflow turns the batch writer off (every run call by call, slower): this says so, so that
    the comparison above is run on the new schema and its revision added to TESTED_SCHEMAS."""
    client = mlflow.tracking.MlflowClient(mlflow_store())
    assert mlflow_batch.SqlBatchWriter.of(client, client.create_experiment("x")) is not None


def test_a_job_running_past_live_after_gets_its_run_while_it_runs(tmp_path, monkeypatch, mlflow_store):
    """The writer thread's tick gives a job running for LIVE_AFTER_S its run (RUNNING) with its rounds so far."""
    from benchmark.run import job_runner

    uri, seen = mlflow_store(), []
    monkeypatch.setattr(mlflow_writer, "LIVE_AFTER_S", 0.2)
    monkeypatch.setattr(mlflow_writer, "TICK_S", 0.05)
    original = job_runner.job_summary

    def slow_summary(job, *args, **kwargs):  # the job's last moment, its rounds on disk: wait for the tick
        client = mlflow.tracking.MlflowClient(uri)
        experiment = client.get_experiment_by_name("tiny").experiment_id
        state = None
        for _ in range(200):  # at most 10 s
            if runs := client.search_runs([experiment], f"tags.`fedbench.job_id` = '{job.id}'"):
                state = (runs[0].info.status, len(client.get_metric_history(runs[0].info.run_id, "test_acc")))
                if state[1] == 3:
                    break
            time.sleep(0.05)
        seen.append(state)
        return original(job, *args, **kwargs)

    monkeypatch.setattr(job_runner, "job_summary", slow_summary)
    runs = ran(tmp_path, uri, "r")
    assert seen == [("RUNNING", 3), ("RUNNING", 3)]
    assert all(r.info.status == "FINISHED" for r in runs.values())


def test_a_queue_not_written_within_the_wait_at_exit_is_named_and_healed_by_sync(
    tmp_path, monkeypatch, caplog, mlflow_store
):
    """The writer still busy when the run ends: the run waits CLOSE_WAIT_S, says how many jobs it left, exits 0
    with every result on disk; `sync` then writes one run per job."""
    import threading

    uri, release = mlflow_store(), threading.Event()
    write = mlflow_batch.SqlBatchWriter.write

    def stuck(self, runs):  # a store that does not answer in time, then fails
        release.wait(60)
        raise RuntimeError("store stuck")

    monkeypatch.setattr(mlflow_batch.SqlBatchWriter, "write", stuck)
    monkeypatch.setattr(mlflow_writer, "CLOSE_WAIT_S", 0.5)
    suite = tmp_path / "tiny.yaml"
    suite.write_text(SUITE)
    args = ["--results-dir", str(tmp_path / "r"), "--tracking-uri", uri]
    with caplog.at_level("WARNING"):
        assert main(["run", str(suite), *args, "-q"]) == 0
    assert "2 finished job(s) not mirrored yet" in caplog.text and "fedbench sync" in caplog.text
    release.set()  # the stuck batch fails, releasing its jobs' locks
    monkeypatch.setattr(mlflow_batch.SqlBatchWriter, "write", write)
    for _ in range(100):
        if "store stuck" in caplog.text:
            break
        time.sleep(0.05)
    assert main(["sync", str(suite), *args]) == 0
    client = mlflow.tracking.MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("tiny").experiment_id], "tags.`fedbench.kind` = 'job'")
    assert sorted(r.data.tags["fedbench.status"] for r in runs) == ["finished", "finished"]


def test_the_light_lookup_of_runs_judges_them_as_their_full_search_does(tmp_path, mlflow_store):
    """heal's look-up (SqlBatchWriter.runs_of: status, status tag, client_acc metrics) against MLflow's
    search_runs, for complete runs and for one killed after its summary was written."""
    from benchmark.run.mlflow_mirror import JobMirror

    uri = mlflow_store()
    runs = ran(tmp_path, uri, "r")
    client = mlflow.tracking.MlflowClient(uri)
    broken = next(iter(runs.values())).info.run_id
    client.set_terminated(broken, "KILLED")
    client.delete_tag(broken, "fedbench.status")
    experiment = client.get_experiment_by_name("tiny").experiment_id
    light = mlflow_batch.SqlBatchWriter.of(client, experiment).runs_of([*runs, "no-such-job"])
    assert light.keys() == runs.keys()
    for job_id, run in runs.items():
        summary = JobDir(Store(tmp_path / "r"), job_id).read_summary()
        full = client.get_run(run.info.run_id)
        assert light[job_id].info.run_id == run.info.run_id
        assert JobMirror.is_complete(light[job_id], summary) == JobMirror.is_complete(full, summary)
        assert JobMirror.is_complete(full, summary) == (run.info.run_id != broken)
