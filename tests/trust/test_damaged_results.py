"""Damaged results heal (issue 34 point 4): a finished job whose metrics.jsonl is missing, cut mid-line or
holds a bare NaN, or whose summary.json is cut, is named once as damaged, shown so by `status`, never
mirrored to MLflow as complete by `sync`, and trained again by the next `run` (resumed from its
checkpoint when it has one), its damaged files kept aside."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
from fedtest import measured, tiny_suite, write_suite

from benchmark.cli import main
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

mlflow = pytest.importorskip("mlflow")


def cut_mid_line(jobdir: JobDir) -> None:
    text = jobdir.metrics.read_text()
    jobdir.metrics.write_text(text[: len(text) // 2])


def bare_nan(jobdir: JobDir) -> None:
    lines = jobdir.metrics.read_text().splitlines()
    record = json.loads(lines[1])
    lines[1] = json.dumps(record).replace(json.dumps(record["test_loss"]), "NaN", 1)
    jobdir.metrics.write_text("\n".join(lines) + "\n")


DAMAGE = {
    "missing": lambda d: d.metrics.unlink(),
    "cut mid-line": cut_mid_line,
    "bare NaN": bare_nan,
    "summary cut": lambda d: d.summary.write_text(d.summary.read_text()[:40]),
}
SAYS = {
    "missing": "metrics.jsonl is missing",
    "cut mid-line": "metrics.jsonl is cut mid-line",
    "bare NaN": "the non-finite value NaN",
    "summary cut": "summary.json is not valid JSON",
}


def finished_job(tmp_path, **defaults):
    raw = tiny_suite(methods=["fedavg"])
    raw["defaults"].update(defaults)
    path = write_suite(tmp_path, raw)
    _, jobs = load_jobs(path)
    results = tmp_path / "r"
    assert main(["run", str(path), "--results-dir", str(results), "--no-tracking", "-q"]) == 0
    return path, results, JobDir(Store(results), jobs[0].id)


def status_of(path, results, capsys) -> dict:
    capsys.readouterr()
    assert main(["status", str(path), "--results-dir", str(results), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["jobs"][0]


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_job_is_named_once_shown_by_status_and_trained_again(tmp_path, capsys, caplog, damage):
    path, results, jobdir = finished_job(tmp_path)
    straight = jobdir.metrics.read_text()
    DAMAGE[damage](jobdir)
    damaged_files = {p.name: p.read_bytes() for p in jobdir.path.iterdir() if p.is_file()}
    shown = status_of(path, results, capsys)
    assert shown["state"] == "damaged" and SAYS[damage] in shown["note"]
    assert main(["status", str(path), "--results-dir", str(results)]) == 0
    assert "0 done, 0 running, 0 failed, 0 diverged, 0 pending, 1 damaged" in capsys.readouterr().out
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert main(["run", str(path), "--results-dir", str(results), "--no-tracking", "-q"]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "is damaged" in warnings[0] and SAYS[damage] in warnings[0], warnings
    assert measured([json.loads(x) for x in jobdir.metrics.read_text().splitlines()]) == measured(
        [json.loads(x) for x in straight.splitlines()]
    )
    assert not jobdir.read_summary().skipped and jobdir.damage() is None
    aside = results / "jobs" / f"{jobdir.path.name}.damaged"
    assert {p.name: p.read_bytes() for p in aside.iterdir() if p.is_file()} == damaged_files  # kept as found
    assert status_of(path, results, capsys)["state"] == "done"


def test_a_damaged_job_with_a_consistent_checkpoint_resumes_from_it(tmp_path, caplog):
    path, results, jobdir = finished_job(tmp_path, rounds=6, checkpoint_every=2)
    straight = jobdir.metrics.read_text()
    # the same job stopped at round 4 leaves the checkpoint a kill before its removal would have left
    elsewhere = tmp_path / "stopped"
    assert main(["run", str(path), "--results-dir", str(elsewhere), "--no-tracking", "-q", "--stop-after", "4"]) == 0
    shutil.copy(JobDir(Store(elsewhere), jobdir.path.name).checkpoint, jobdir.checkpoint)
    lines = jobdir.metrics.read_text().splitlines()
    jobdir.metrics.write_text("\n".join(lines[:4]) + "\n" + lines[4][:20])  # rounds 1-4 whole, half of 5
    with caplog.at_level(logging.WARNING):
        assert main(["run", str(path), "--results-dir", str(results), "--no-tracking", "-q"]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "cut mid-line at line 5; `fedbench run` resumes it from its checkpoint" in warnings[0]
    assert (jobdir.path / "summary.json.damaged").exists() and not jobdir.checkpoint.exists()
    assert (jobdir.path / "metrics.jsonl.damaged").read_text().endswith(lines[4][:20])  # kept as found
    resumed = [json.loads(x) for x in jobdir.metrics.read_text().splitlines()]
    assert measured(resumed) == measured([json.loads(x) for x in straight.splitlines()])


def garbled_inside(jobdir: JobDir) -> None:
    """A record garbled within its line (bit rot, a bad copy): the file's end and its numbers' names look
    whole, so only a parse of every line sees it; the parse before mirroring to MLflow does."""
    lines = jobdir.metrics.read_text().splitlines()
    lines[1] = lines[1].replace('"test_acc": ', '"test_acc": 5x', 1)
    jobdir.metrics.write_text("\n".join(lines) + "\n")


def mirrored_runs(uri: str) -> list:
    client = mlflow.tracking.MlflowClient(uri)
    experiment = client.get_experiment_by_name("tiny")
    return client.search_runs([experiment.experiment_id], "tags.`fedbench.kind` = 'job'") if experiment else []


def assert_mirrors_the_retrained_job(uri: str, jobdir: JobDir) -> None:
    (run,) = mirrored_runs(uri)
    assert run.info.status == "FINISHED" and run.data.tags["fedbench.status"] == "finished"
    history = mlflow.tracking.MlflowClient(uri).get_metric_history(run.info.run_id, "test_acc")
    assert [(m.step, m.value) for m in history] == [(r.round, r.test_acc) for r in jobdir.read_metrics()]
    assert len(history) == 4 and jobdir.damage(every_line=True) is None


@pytest.mark.parametrize("damage", [cut_mid_line, garbled_inside])
def test_sync_never_mirrors_a_damaged_job_and_the_next_run_mirrors_it_whole(tmp_path, caplog, mlflow_store, damage):
    path, results, jobdir = finished_job(tmp_path)  # run without tracking: MLflow has no run of it yet
    uri = mlflow_store()
    damage(jobdir)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert main(["sync", str(path), "--results-dir", str(results), "--tracking-uri", uri]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and f"job {jobdir.path.name} is damaged" in warnings[0], warnings
    assert not [r for r in mirrored_runs(uri) if r.info.status == "FINISHED"]  # nothing mirrored as complete
    assert (results / "jobs" / f"{jobdir.path.name}.damaged").is_dir()  # kept, for `run` to train it again
    assert main(["run", str(path), "--results-dir", str(results), "--tracking-uri", uri, "-q"]) == 0
    assert_mirrors_the_retrained_job(uri, jobdir)


def test_a_run_with_tracking_finds_a_record_garbled_inside_its_line_and_trains_the_job_again(
    tmp_path, caplog, mlflow_store
):
    path, results, jobdir = finished_job(tmp_path)
    uri = mlflow_store()
    garbled_inside(jobdir)
    with caplog.at_level(logging.WARNING):
        assert main(["run", str(path), "--results-dir", str(results), "--tracking-uri", uri, "-q"]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "line 2 is not a JSON record" in warnings[0], warnings
    assert_mirrors_the_retrained_job(uri, jobdir)
