"""What `fedbench report` writes is its registered outputs (benchmark/report/report_output.py): a new
output is one class registered from one module, here this test module, and the real CLI writes it
beside the built-in ones, run on a suite written as YAML text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmark import plugins
from benchmark.cli import main
from benchmark.report.report_files import write_text
from benchmark.report.report_output import OUTPUTS, ReportInputs, ReportOutput, every_output

SUITE = """\
name: registered
defaults:
  rounds: 3
  seeds: [0, 1]
  num_clients: 4
  participation: {rate: 1.0}
  local: {epochs: 1, batch_size: 8, lr: 0.1}
  model: {name: logistic}
  metrics: [acc@3]
datasets:
  - name: synthetic
    params: {num_users: 4, dim: 6, num_classes: 3, max_samples: 40}
    split: {kind: natural}
methods: [fedavg, fedprox]
"""


class FinishedSeeds(ReportOutput):
    """A throwaway output: per table, each row's method and its finished seeds, one line each."""

    name = "finished seeds"

    def write(self, report: ReportInputs):
        return [
            write_text(
                report.view.tables / f"{t.slug}.seeds.txt",
                "".join(f"{row.method}: {row.n} of {len(row.job_ids)}\n" for row in t.rows),
            )
            for t in report.tables
        ]


class Broken(ReportOutput):
    """A throwaway output with a bug."""

    name = "broken"

    def write(self, report: ReportInputs):
        raise ValueError("no such column")


@pytest.fixture
def register():
    """Registers outputs from this module for one test, then withdraws them: no other test writes them."""
    yield OUTPUTS.register
    plugins.withdraw(__name__)
    assert "finished seeds" not in OUTPUTS and "broken" not in OUTPUTS


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> tuple[Path, Path]:
    """(suite file, results folder) after `fedbench run` of SUITE."""
    root = tmp_path_factory.mktemp("registered")
    suite = root / "suite.yaml"
    suite.write_text(SUITE)
    results = root / "results"
    assert main(["run", str(suite), "--results-dir", str(results), "--no-tracking", "-q", "--threads", "1"]) == 0
    return suite, results


def test_the_built_in_outputs_in_the_order_they_are_written():
    """Figures before the files that show them, the documents last (what `fedbench report` relies on)."""
    names = [o.name for o in every_output()]
    assert names[:2] == ["convergence figures", "sensitivity figures"]
    assert names[-2:] == ["report.md", "report.html"]
    assert {"report.json", "runs.csv", "table .csv", "table .tex"} <= set(names)


def test_an_output_registered_from_a_test_module_is_written_by_fedbench_report(register, ran, capsys):
    register(FinishedSeeds)
    suite, results = ran
    capsys.readouterr()
    assert main(["report", str(suite), "--results-dir", str(results), "--no-tracking"]) == 0
    printed = capsys.readouterr().out
    report = results / "registered" / "report"
    assert (report / "tables" / "synthetic.seeds.txt").read_text() == "FedAvg: 2 of 2\nFedProx: 2 of 2\n"
    # beside every built-in output, which the documents after it still describe
    assert {p.name for p in (report / "tables").iterdir()} == {"synthetic.csv", "synthetic.tex", "synthetic.seeds.txt"}
    assert json.loads((report / "report.json").read_text())["tables"][0]["entry"] == "synthetic"
    assert "FedProx" in (report / "report.md").read_text() and (report / "report.html").exists()
    assert f"report: {report / 'report.html'} and report.md" in " ".join(printed.split())


def test_an_output_that_fails_is_named_and_exits_2(register, ran, capsys):
    register(Broken)
    suite, results = ran
    report = results / "registered" / "report"
    shutil.rmtree(report, ignore_errors=True)
    assert main(["report", str(suite), "--results-dir", str(results), "--no-tracking"]) == 2
    printed = " ".join(capsys.readouterr().err.split())
    assert f"report output 'broken' ({__name__}) failed: ValueError: no such column" in printed
    assert "Traceback" not in printed
    assert (report / "report.json").exists() and not (report / "report.md").exists()  # written in order
