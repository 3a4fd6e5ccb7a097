"""What CI reads from `fedbench check`: the JUnit file (read back with junitparser), the JSON
(validated against docs/schemas/check.schema.json) and one MLflow run per check, whatever the
outcome: a check that cannot compare (exit 2) still leaves both files, naming the reason."""

from __future__ import annotations

import json

import jsonschema
import pytest
from fedtest import REPO
from junitparser import Error, Failure, JUnitXml, Properties

from benchmark.cli import main

SUITE = str(REPO / "suites" / "ci.yaml")
BASELINE = REPO / "results" / "baselines" / "ci.json"
SCHEMA = json.loads((REPO / "docs" / "schemas" / "check.schema.json").read_text())
CHECK = ["check", SUITE, "--threads", "1", "--quiet"]


def valid_report(capsys) -> dict:
    report = json.loads(capsys.readouterr().out)
    jsonschema.validate(report, SCHEMA, format_checker=jsonschema.FormatChecker())
    return report


def read_junit(path):
    """The file as a CI system reads it; the counts it declares are those of its cases."""
    xml = JUnitXml.fromfile(str(path))
    [suite] = list(xml)
    declared = (suite.tests, suite.failures, suite.errors, suite.skipped)
    seconds = suite.time  # the check's wall time; update_statistics would sum the cases' (jobs run per group)
    suite.update_statistics()
    suite.time = seconds
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == declared
    assert (xml.tests, xml.failures, xml.errors, xml.skipped) == declared
    return suite


def numbers(case) -> dict[str, float]:
    props = case.child(Properties)
    return {p.name: float(p.value) for p in props if p.name in ("baseline", "now", "delta", "tolerance")}


@pytest.mark.parametrize(
    "args, content, reason",
    [
        ([], None, "no baseline at"),
        (["--seeds", "0,1"], "ci", "synthetic / FedAvg: 2 seed(s); the gate compares means over at least 3 seeds"),
        ([], "[]", "a JSON list, not a baseline"),
        ([], '{"synthetic / FedAvg / seed 0": {"final_acc": -50}}', "final_acc = -50 is not an accuracy in [0, 100]"),
        (["--tolerance", "1e308"], "ci", "--tolerance 1e+308 is above 5, the most the gate allows"),
    ],
)
def test_a_check_that_cannot_compare_still_writes_junit_and_json_naming_the_reason(
    tmp_path, capsys, args, content, reason
):
    baseline = BASELINE if content == "ci" else tmp_path / "baseline.json"
    if content not in (None, "ci"):
        baseline.write_text(content)
    junit = tmp_path / "reports" / "check.xml"
    argv = CHECK + ["--no-tracking", "--baseline", str(baseline), "--junit-xml", str(junit), "--json", *args]
    assert main(argv) == 2
    report = valid_report(capsys)
    assert (report["verdict"], report["passed"], report["exit_code"], report["rows"]) == ("error", False, 2, [])
    assert reason in report["error"]
    [case] = read_junit(junit)
    [error] = case.result
    assert isinstance(error, Error) and error.type == "input" and reason in error.message


def test_the_junit_and_json_of_a_failing_check_carry_each_comparisons_numbers(tmp_path, capsys):
    junit = tmp_path / "check.xml"
    argv = CHECK + ["--no-tracking", "--baseline", str(BASELINE), "--only", "FedAvg", "--set", "local.lr=0.02"]
    assert main(argv + ["--junit-xml", str(junit), "--json"]) == 1
    report = valid_report(capsys)
    rows = {r["metric"]: r for r in report["rows"]}
    assert report["counts"] == {
        "comparisons": 5,
        "failed": 4,
        "regressions": 0,
        "improved": 4,
        "within_tolerance": 1,
    }
    suite = read_junit(junit)
    assert suite.time > 0 and suite.time == pytest.approx(report["seconds"], abs=1e-3)
    cases = {case.name: case for case in suite}
    assert set(cases) == set(rows)
    for metric, case in cases.items():
        row = rows[metric]
        assert numbers(case) == pytest.approx({k: row[k] for k in ("baseline", "now", "delta", "tolerance")})
        if row["failed"]:
            [failure] = case.result
            assert isinstance(failure, Failure) and failure.type == row["failure_type"] == "improvement"
        else:
            assert case.is_passed and row["verdict"] == "within tolerance"


def test_each_check_is_its_own_mlflow_run_with_its_verdict(tmp_path, capsys, monkeypatch):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.chdir(tmp_path)
    argv = CHECK + ["--baseline", str(BASELINE), "--only", "FedAvg"]
    assert main(argv) == 0
    assert main(argv + ["--set", "local.lr=0.005", "--junit-xml", "check.xml"]) == 1
    assert main(argv + ["--seeds", "0,1"]) == 2  # exit 2 is part of the history too
    capsys.readouterr()

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("ci").experiment_id
    runs = client.search_runs([experiment], order_by=["attributes.start_time ASC"])
    assert [r.data.tags["fedbench.kind"] for r in runs] == ["check"] * 3  # the jobs are not mirrored
    assert [r.data.tags["fedbench.verdict"] for r in runs] == ["passed", "failed", "error"]
    assert [r.data.metrics["passed"] for r in runs] == [1.0, 0.0, 0.0]
    assert [r.info.status for r in runs] == ["FINISHED", "FAILED", "FAILED"]
    failing = runs[1]
    assert failing.data.metrics["regressions"] == 3 and failing.data.metrics["synthetic / FedAvg/acc_at_30/delta"] < -1
    assert "2 seed(s)" in runs[2].data.tags["fedbench.error"]
    logged = {a.path for a in client.list_artifacts(failing.info.run_id, "check")}
    assert logged == {"check/check.json", "check/check.xml"}


def test_a_tracking_store_that_cannot_be_reached_leaves_the_verdict_and_files_alone(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")  # the discard port: refused at once
    junit = tmp_path / "check.xml"
    assert main(CHECK + ["--baseline", str(BASELINE), "--seeds", "0,1", "--junit-xml", str(junit)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "warning: this check was not logged to MLflow (ConnectionError: tracking server" in err, err
    assert "2 seed(s)" in err and read_junit(junit).errors == 1
