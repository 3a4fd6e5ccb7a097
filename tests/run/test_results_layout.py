"""Every path under a results folder comes from one place (store/layout.py): what `run` and `report` write and
print lies where `Store` and `SuiteView` say, and a suite named like the job store is refused by every command."""

from __future__ import annotations

import json

from benchmark.cli import main
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

SUITE = """\
name: layout
defaults:
  rounds: 2
  num_clients: 4
  participation: {rate: 0.5}
  local: {epochs: 1, batch_size: 8, lr: 0.05}
  model: {name: logistic}
datasets:
  - name: synthetic
    params: {num_users: 4, dim: 5, num_classes: 3, max_samples: 40}
    split: {kind: natural}
methods: [fedavg]
"""


def flat(printed: str) -> str:
    """What a command printed, without the spaces and line breaks the console wraps long paths with."""
    return "".join(printed.split())


def test_run_and_report_write_and_name_what_the_suite_view_says(tmp_path, capsys):
    suite_file = tmp_path / "layout.yaml"
    suite_file.write_text(SUITE)
    results = tmp_path / "results"
    view = Store(results).suite("layout")
    assert main(["run", str(suite_file), "--results-dir", str(results), "--no-tracking", "-q"]) == 0
    assert f"results:{view.path}" in flat(capsys.readouterr().out)
    (job,) = load_jobs(suite_file)[1]
    assert (view.path / job.id).resolve() == Store(results).job(job.id).resolve()  # the view links into the store

    assert main(["report", str(suite_file), "--results-dir", str(results), "--no-tracking"]) == 0
    said = flat(capsys.readouterr().out)
    assert f"tablesin{view.tables}" in said
    record = json.loads((view.report / "report.json").read_text())
    assert record["jobs"] == [job.id]
    assert {p.name for p in view.report.iterdir()} >= {"report.md", "report.html", "runs.csv", "tables"}
    assert sorted(p.suffix for p in view.tables.iterdir()) == [".csv", ".tex"]  # the one entry's table
    figures = sorted(view.figures.glob("*.png"))
    assert figures and all(f"figure:{f}" in said for f in figures)  # drawn there, and named so
    assert any(f.name.startswith("clients-") for f in figures)  # natural users: read from client_acc.json


def test_a_suite_named_like_the_store_is_refused_by_the_commands_that_read_too(tmp_path, capsys):
    suite_file = tmp_path / "jobs.yaml"
    suite_file.write_text(SUITE.replace("name: layout", "name: jobs"))
    results = tmp_path / "results"
    for command in (["status"], ["report", "--no-tracking"]):
        assert main([*command, str(suite_file), "--results-dir", str(results)]) == 2
        assert "a suite cannot be named 'jobs'" in capsys.readouterr().err
    assert not (results / "jobs").exists()  # nothing read as a suite's view, nothing written
