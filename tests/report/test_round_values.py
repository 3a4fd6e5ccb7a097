"""A per-round value is declared once (benchmark/round_values.py) and flows from that declaration to
metrics.jsonl, MLflow, the report's frames and its tables: shown with a throwaway value a plugin file
declares, named by a suite written as YAML text, run and reported through the real CLI."""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path

import pytest
import torch

from benchmark import plugins
from benchmark.cli import main
from benchmark.report.frames import rounds_frame
from benchmark.round_values import BUILT_IN, ROUND_VALUES, logged
from benchmark.store.layout import Store
from benchmark.store.records import MEASURED, OPTIONAL, ROUND_FIELDS, RoundRecord
from benchmark.suite.expand import load_jobs

mlflow = pytest.importorskip("mlflow")

PLUGIN = "throwaway_round_value"
# the whole declaration: a name, its type, how a job's rounds aggregate, MLflow on, a label, a table column,
# and how the engine measures it (here: the norm of the parameters the round evaluated)
PLUGIN_TEXT = """\
from fedbench import RoundValue, register_round_value

register_round_value(
    RoundValue(
        "param_norm",
        float,
        "max",
        "max param norm",
        column=True,
        measure=lambda sim: sim.eval_params().norm(),
    )
)
"""
SUITE = f"""\
name: declared
plugins: [./{PLUGIN}.py]
defaults:
  rounds: 3
  seeds: [0, 1]
  num_clients: 4
  participation: {{rate: 1.0}}
  local: {{epochs: 1, batch_size: 8, lr: 0.1}}
  model: {{name: logistic}}
  metrics: [acc@3]
datasets:
  - name: synthetic
    params: {{num_users: 4, dim: 6, num_classes: 3, max_samples: 40}}
    split: {{kind: natural}}
methods: [fedavg, fedavgm]
"""


@pytest.fixture
def declared(tmp_path, mlflow_store):
    """(suite file, results folder, MLflow uri) after `run` and `report` of SUITE; the plugin's value is
    withdrawn afterwards, so no other test records it."""
    (tmp_path / f"{PLUGIN}.py").write_text(PLUGIN_TEXT)
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    results, uri = tmp_path / "results", mlflow_store()
    common = ["--results-dir", str(results), "--tracking-uri", uri]
    try:
        assert main(["run", str(suite), *common, "-q", "--threads", "1"]) == 0
        assert main(["report", str(suite), *common]) == 0
        yield suite, results, uri
    finally:
        forget(PLUGIN)


def forget(plugin: str) -> None:
    """Withdraw what a test's plugin file registered and forget the module, so no later test records it."""
    plugins.withdraw(plugin)
    plugins._imported.pop(plugin, None)  # noqa: SLF001
    sys.modules.pop(plugin, None)


def _records(results: Path, job_id: str) -> list[dict]:
    return [json.loads(line) for line in (results / "jobs" / job_id / "metrics.jsonl").read_text().splitlines()]


def test_a_declared_value_reaches_metrics_jsonl_mlflow_frames_and_tables(declared):
    suite, results, uri = declared
    _, jobs = load_jobs(str(suite))
    assert len(jobs) == 4

    # metrics.jsonl: every evaluated round has it, and the last is the saved final model's norm
    per_job = {}
    for job in jobs:
        records = _records(results, job.id)
        assert [r["round"] for r in records] == [1, 2, 3]
        per_job[job.id] = [r["param_norm"] for r in records]
        model = torch.load(results / "jobs" / job.id / "final_model.pt", weights_only=True)
        norm = float(torch.cat([t.flatten() for t in model.values()]).norm())
        assert per_job[job.id][-1] == pytest.approx(norm, rel=1e-6)
        assert len(set(per_job[job.id])) > 1  # measured each round, not once

    # MLflow: a metric of each job's run, one point per evaluated round
    client = mlflow.tracking.MlflowClient(uri)
    experiment = client.get_experiment_by_name("declared")
    runs = client.search_runs([experiment.experiment_id], "tags.`fedbench.kind` = 'job'")
    assert len(runs) == 4
    for run in runs:
        history = sorted(client.get_metric_history(run.info.run_id, "param_norm"), key=lambda m: m.step)
        expected = per_job[run.data.tags["fedbench.job_id"]]
        assert [m.step for m in history] == [1, 2, 3]
        assert [m.value for m in history] == pytest.approx(expected, rel=1e-12)

    # frames: a column of the rounds frame
    frame = rounds_frame(jobs, Store(results))
    for job in jobs:
        assert list(frame[frame.job_id == job.id].param_norm) == per_job[job.id]

    # tables: a column labelled as declared, each cell the max over rounds (the declared aggregate), mean ±
    # std over the seeds, in the tidy CSV, the Markdown report and runs.csv
    report = results / "declared" / "report"
    rows = list(csv.DictReader((report / "tables" / "synthetic.csv").open()))
    assert [r["method"] for r in rows] == ["FedAvg", "FedAvgM"]
    for row in rows:
        maxima = [max(per_job[j]) for j in row["jobs"].split()]
        assert float(row["param_norm.mean"]) == pytest.approx(sum(maxima) / 2, rel=1e-12)
        assert float(row["param_norm.std"]) == pytest.approx(math.dist(maxima, [sum(maxima) / 2] * 2), rel=1e-9)
        assert row["param_norm.n"] == "2"
    assert "| max param norm |" in (report / "report.md").read_text()
    runs_csv = {r["job_id"]: r for r in csv.DictReader((report / "runs.csv").open())}
    assert {j: float(r["param_norm"]) for j, r in runs_csv.items()} == pytest.approx(
        {j: max(v) for j, v in per_job.items()}
    )


def test_the_built_in_values_are_the_records_fields_and_mlflows_metrics():
    """RoundRecord, what MLflow logs, and what metrics.jsonl may leave out all come from the declarations."""
    assert ROUND_FIELDS == tuple(v.name for v in BUILT_IN)
    measured = ("test_acc", "test_loss", "train_loss", "ema_acc", "bytes_down", "bytes_up", "subopt", "val_acc")
    assert MEASURED == (*measured, "val_loss")
    assert OPTIONAL == ("subopt", "val_acc", "val_loss", "time", "wall_s")
    assert logged() == list(MEASURED)  # no plugin declared one here
    assert all(ROUND_VALUES.get(v.name) is v for v in BUILT_IN)
    line = {"round": 2, "test_acc": 50.0, "test_loss": 1.0, "train_loss": 0.9, "ema_acc": 45.0}
    line |= {"bytes_down": 10, "bytes_up": 20, "wall_s": 0.5, "a_newer_value": 3}
    record = RoundRecord.from_json(line)
    assert record.to_json() == line and record.value("a_newer_value") == 3 and record.value("subopt") is None


@pytest.mark.parametrize(
    "declaration, said",
    [
        ('RoundValue("grad_norm", float, "median", "‖g‖")', "aggregate is one of last, sum, mean, max, min"),
        ('RoundValue("acc@5", float, "max", "acc")', "a name is a Python identifier"),
        ('RoundValue("test_acc", float, "max", "acc")', "'test_acc' is registered twice"),
    ],
)
def test_a_declaration_that_cannot_flow_everywhere_is_refused_when_the_suite_is_read(
    tmp_path, capsys, declaration, said
):
    (tmp_path / "bad_round_value.py").write_text(
        f"from fedbench import RoundValue, register_round_value\n\nregister_round_value({declaration})\n"
    )
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.replace(PLUGIN, "bad_round_value"))
    try:
        assert main(["plan", str(suite)]) == 2
    finally:
        forget("bad_round_value")
    printed = " ".join(capsys.readouterr().err.split())
    assert said in printed and "plugins[0]" in printed and "Traceback" not in printed
    assert "bad_round_value.py:3" in printed  # the plugin's line that declared it


def test_a_column_named_like_a_jobs_table_column_is_an_error_that_keeps_the_results(tmp_path, capsys):
    """`stale` is a column of the jobs' table: its table column would overwrite it. The jobs run and keep
    their results; the tables `run` prints at its end say what to rename, exit 2."""
    declaration = 'RoundValue("stale", float, "max", "stale", column=True, measure=lambda sim: 1.0)'
    (tmp_path / "stale_round_value.py").write_text(
        f"from fedbench import RoundValue, register_round_value\n\nregister_round_value({declaration})\n"
    )
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.replace(PLUGIN, "stale_round_value"))
    results = tmp_path / "results"
    try:
        assert main(["run", str(suite), "--results-dir", str(results), "--no-tracking", "-q", "--threads", "1"]) == 2
    finally:
        forget("stale_round_value")
    printed = " ".join(capsys.readouterr().err.split())
    assert "per-round value 'stale' has the name of a column of the jobs' table: rename it" in printed
    assert "Traceback" not in printed
    summaries = [json.loads(p.read_text()) for p in (results / "jobs").glob("*/summary.json")]
    assert [s["status"] for s in summaries] == ["finished"] * 4
