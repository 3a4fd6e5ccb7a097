"""MLflow mirror: one parent run per invocation, a child per job with params, per-round metrics, artifacts."""

from __future__ import annotations

import json
import platform

import pytest
import torch
from fedtest import tiny_suite, write_suite

from benchmark.cli import main
from benchmark.run.tracking import attach_to_suite_run

mlflow = pytest.importorskip("mlflow")


def test_parent_and_child_runs_in_a_sqlite_store(tmp_path, monkeypatch, capfd):
    """The one default test that lets fedbench create its store (the others copy a made one)."""
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    suite = write_suite(tmp_path, tiny_suite())
    assert main(["run", str(suite), "--tracking-uri", uri, "--results-dir", str(tmp_path / "results")]) == 0
    printed = capfd.readouterr()
    assert "database tables" not in printed.err  # MLflow's store-creation chatter stays quiet

    client = mlflow.tracking.MlflowClient(uri)
    exp = client.get_experiment_by_name("tiny")
    # how to see it: the UI's runs table, not MLflow 3's default GenAI view of an experiment
    page = f"http://127.0.0.1:5000/#/experiments/{exp.experiment_id}/runs?workflowType=machine_learning"
    assert f"mlflow ui --backend-store-uri {uri}, then {page}" in " ".join(printed.out.split())
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
    # with a real store's calls left out of the training time once (they were subtracted twice: -0.11 s)
    records = [json.loads(line) for f in (tmp_path / "results").rglob("metrics.jsonl") for line in f.open()]
    assert len(records) == 8 and all(r["wall_s"] >= 0 for r in records)


def test_env_variable_selects_the_store(tmp_path, monkeypatch, mlflow_store):
    monkeypatch.chdir(tmp_path)
    uri = mlflow_store("env.db")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    suite = write_suite(tmp_path, tiny_suite(methods=["fedavg"]))
    assert main(["run", str(suite), "--results-dir", str(tmp_path / "results")]) == 0
    assert mlflow.tracking.MlflowClient(uri).get_experiment_by_name("tiny") and not (tmp_path / "mlflow.db").exists()


def test_jobs_open_at_the_same_time_log_into_their_own_runs(mlflow_store):
    """The Ray driver interleaves jobs running in parallel."""
    from benchmark.run.tracking import MlflowTracker
    from benchmark.suite.expand import expand
    from benchmark.suite.schema import Suite

    a, b = expand(Suite(**tiny_suite()))
    uri = mlflow_store()
    tracker = MlflowTracker("tiny", uri)
    tracker.start_job(a, {"job_id": a.id})
    tracker.start_job(b, {"job_id": b.id})
    from benchmark.store.records import RoundRecord, summary_from_json

    def records(*lines: str) -> list[RoundRecord]:  # as metrics.jsonl holds them
        return [RoundRecord.from_json(json.loads(line)) for line in lines]

    tracker.log_records(records('{"round": 1, "test_acc": 10.0}'), a.id)
    tracker.log_records(records('{"round": 1, "test_acc": 20.0}', '{"round": 2, "test_acc": 30.0}'), b.id)
    tracker.log_records(records('{"round": 2, "test_acc": 40.0}', '{"round": 3, "test_acc": 50.0}'))  # no job named:
    tracker.log_records(
        records('{"round": 1, "test_acc": 10.0}'), a.id
    )  # the one started last; rounds a run has are skipped
    tracker.end_job(summary_from_json({"job_id": a.id, "status": "finished"}), [])
    tracker.close()

    client = mlflow.tracking.MlflowClient(uri)
    runs = {
        r.data.tags["fedbench.job_id"]: r
        for r in client.search_runs(
            [client.get_experiment_by_name("tiny").experiment_id], "tags.`fedbench.kind` = 'job'"
        )
    }
    history = {
        job: [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "test_acc")]
        for job, run in runs.items()
    }
    assert history == {a.id: [(1, 10.0)], b.id: [(1, 20.0), (2, 30.0), (3, 50.0)]}
    assert runs[a.id].info.status == "FINISHED" and runs[b.id].info.status == "KILLED"  # b never ended


def test_runs_carry_tags_unique_names_named_term_params_and_final_metrics(tmp_path, monkeypatch, mlflow_store):
    monkeypatch.chdir(tmp_path)
    uri = mlflow_store()
    suite = write_suite(tmp_path, tiny_suite(grid={"local.lr": [0.05, 0.1]}))
    results = tmp_path / "results"
    assert (
        main(
            [
                "run",
                str(suite),
                "--tracking-uri",
                uri,
                "--results-dir",
                str(results),
                "-q",
                "--seeds",
                "3",
                "--rounds",
                "3",
            ]
        )
        == 0
    )

    client = mlflow.tracking.MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("tiny").experiment_id])
    [parent] = [r for r in runs if r.data.tags["fedbench.kind"] == "suite"]
    children = [r for r in runs if r.data.tags["fedbench.kind"] == "job"]
    headlines = [r for r in runs if r.data.tags["fedbench.kind"] == "headline"]
    assert len(children) == 4 and len({r.info.run_name for r in children}) == 4
    assert len(parent.data.tags["mlflow.source.git.commit"]) == 40 and "fedbench.version.torch" in parent.data.tags
    # one tag per fact: no fedbench.env.* copy of a version, git or host tag; booleans spelt one way
    for run in [parent, *children]:
        tags = run.data.tags
        assert tags["fedbench.version.python"] == platform.python_version() and tags["fedbench.host"]
        assert not {"fedbench.python", "fedbench.env.torch", "fedbench.env.git_commit", "fedbench.env.host"} & set(tags)
        assert tags["fedbench.git_dirty"] in ("true", "false")
    assert [a.path for a in client.list_artifacts(parent.info.run_id, "suite")] == ["suite/suite.yaml"]
    # the parent shows something in MLflow's default views: shared settings and each method's headline
    assert parent.data.params["suite"] == "tiny" and parent.data.params["rounds"] == "3"
    assert "local.lr" not in parent.data.params  # the grid varies it
    assert [d.dataset.name for d in parent.inputs.dataset_inputs] == ["synthetic"]  # one input for its 4 jobs
    finals = {
        m: [c.data.metrics["final_ema_acc"] for c in children if c.data.tags["fedbench.method"] == m]
        for m in ("FedAvg", "FedACG")
    }
    # a run per method under the parent, the same metric key in each: MLflow's chart view compares them in one
    # chart (section "synthetic"); one seed: the better lr's final EMA accuracy
    assert {r.data.tags["fedbench.method"]: r.data.metrics["synthetic/final_ema_acc"] for r in headlines} == {
        method: max(values) for method, values in finals.items()
    }
    assert {r.data.tags["mlflow.parentRunId"] for r in headlines} == {parent.info.run_id}
    assert not parent.data.metrics  # no chart per method
    for child in children:
        tags, params, metrics = child.data.tags, child.data.params, child.data.metrics
        summary = json.loads((results / "tiny" / tags["fedbench.job_id"] / "summary.json").read_text())
        assert (tags["fedbench.suite"], tags["fedbench.dataset"], tags["fedbench.seed"]) == ("tiny", "synthetic", "3")
        assert tags["fedbench.method"] in ("FedAvg", "FedACG") and "mlflow.source.git.commit" in tags
        assert tags["fedbench.setting"].endswith(" rounds=3")  # the command-line override says so
        # the method first, then its settings, the dataset, the seed and the job id's head
        assert (
            child.info.run_name
            == f"{tags['fedbench.method']} local.lr={params['local.lr']} rounds=3 · synthetic · s3 · {tags['fedbench.job_id'][:6]}"
        )
        assert "None" not in params.values() and params["metrics"] == "acc@2, rounds_to@30"  # not a Python repr
        assert tags["mlflow.user"] and tags["mlflow.source.name"] == str(suite)
        [dataset] = child.inputs.dataset_inputs
        assert (dataset.dataset.name, dataset.dataset.digest) == ("synthetic", summary["data_fingerprint"])
        assert metrics["summary.acc_at_2"] == summary["metrics"]["acc@2"]
        env = summary["environment"]  # where the job ran, in summary.json and as tags
        assert env["torch"] == torch.__version__ and env["device"] == "cpu" and env["threads"] >= 1
        assert {"cuda", "cudnn", "git_commit", "deterministic_algorithms"} <= set(env)
        assert tags["fedbench.version.torch"] == torch.__version__ and tags["fedbench.env.device"] == "cpu"
        assert tags["fedbench.env.device_name"] not in ("x86_64", "aarch64", "")  # the CPU's model
        assert tags["fedbench.env.deterministic_algorithms"] in ("true", "false")
        if tags["fedbench.method"] == "FedACG":
            assert params["method.client.prox.mu"] == "0.01"  # keyed by the term's name, not its position
        assert metrics["final_acc"] == summary["final_acc"] and metrics["wall_time_s"] == summary["wall_time_s"]

    report = tmp_path / "report.md"
    report.write_text("# report")
    assert attach_to_suite_run("tiny", [report], uri)
    assert [a.path for a in client.list_artifacts(parent.info.run_id, "report")] == ["report/report.md"]
    assert not attach_to_suite_run("no-such-suite", [report], uri)


def test_the_final_model_is_logged_where_the_suite_asks_live_and_when_healed(tmp_path, mlflow_store):
    """log_model: true attaches final_model.pt under model/ (same tensors as in results/) on a live
    run and on a run `sync` mirrors later (as the job's config.json recorded it); it moves no job
    id; off by default."""
    from benchmark.suite.expand import load_jobs

    plain = tiny_suite(methods=["fedavg"])
    plain_suite = write_suite(tmp_path, plain, "plain.yaml")
    suite = write_suite(tmp_path, tiny_suite(methods=["fedavg"], defaults={**plain["defaults"], "log_model": True}))
    (job,) = load_jobs(plain_suite)[1]
    assert [j.id for j in load_jobs(suite)[1]] == [job.id]  # not part of the job id

    def logged_models(store: str, command: str, suite_file, results=tmp_path / "results") -> list[str]:
        uri = mlflow_store(store)
        assert main([command, str(suite_file), "--results-dir", str(results), "--tracking-uri", uri]) == 0
        client = mlflow.tracking.MlflowClient(uri)
        experiment = client.get_experiment_by_name("tiny").experiment_id
        (run,) = client.search_runs([experiment], "tags.`fedbench.kind` = 'job'")
        paths = [a.path for a in client.list_artifacts(run.info.run_id, "model")]
        for path in paths:
            into = tmp_path / f"{store}.artifacts"
            into.mkdir()
            logged = torch.load(client.download_artifacts(run.info.run_id, path, str(into)), weights_only=True)
            saved = torch.load(results / "tiny" / job.id / "final_model.pt", weights_only=True)
            assert saved.keys() == logged.keys() and all(torch.equal(saved[k], logged[k]) for k in saved)
        return paths

    assert logged_models("live.db", "run", suite) == ["model/final_model.pt"]
    # the job is on disk and these stores have no run of it: sync mirrors it, with the model where asked
    assert logged_models("healed.db", "sync", suite) == ["model/final_model.pt"]
    assert logged_models("default.db", "run", plain_suite, tmp_path / "plain") == []
