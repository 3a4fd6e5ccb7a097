"""`status --json` and `report --json` are versioned and valid against the JSON Schemas published in
docs/schemas/, with numbers as numbers and lists as lists, as a script consuming them would check."""

from __future__ import annotations

import contextlib
import io
import json

import jsonschema
import pytest
from fedtest import REPO

from benchmark.cli import main

SUITE = """\
name: schemas
defaults:
  rounds: 3
  seeds: [0, 1]
  num_clients: 4
  participation: {rate: 1.0}
  local: {epochs: 1, batch_size: 8, lr: 0.05}
  model: {name: logistic}
  metrics: [acc@2, rounds_to@30]
datasets:
  - name: synthetic
    params: {num_users: 4, dim: 5, num_classes: 3, max_samples: 40}
    split: {kind: natural}
methods:
  - fedavg
  - {preset: fedacg, grid: {server.lam: [0.8, 0.9]}}
"""


def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((REPO / "docs" / "schemas" / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """status before and after the run, and report, as JSON; and report.json as written."""
    folder = tmp_path_factory.mktemp("schemas")
    (folder / "schemas.yaml").write_text(SUITE)
    suite, results = str(folder / "schemas.yaml"), str(folder / "results")
    found = {}  # module scope has no capsys: stdout is redirected
    for key, argv in [
        ("pending", ["status", suite, "--results-dir", results, "--json"]),
        ("run", ["run", suite, "--results-dir", results, "--no-tracking", "-q"]),
        ("status", ["status", suite, "--results-dir", results, "--json"]),
        ("report", ["report", suite, "--results-dir", results, "--no-tracking", "--json"]),
    ]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert main(argv) == 0, key
        if key != "run":
            found[key] = json.loads(out.getvalue())
    found["report.json"] = json.loads((folder / "results" / "schemas" / "report" / "report.json").read_text())
    return found


@pytest.mark.parametrize("key", ["pending", "status"])
def test_status_json_is_valid_against_its_schema(outputs, key):
    status = outputs[key]
    validator("status").validate(status)
    assert status["schema_version"] == 1 and len(status["jobs"]) == (1 + 2) * 2
    states = {j["state"] for j in status["jobs"]}
    assert states == ({"pending"} if key == "pending" else {"done"})


@pytest.mark.parametrize("key", ["report", "report.json"])
def test_report_json_is_valid_against_its_schema(outputs, key):
    validator("report").validate(outputs[key])


def test_report_json_holds_numbers_and_lists(outputs):
    report, status = outputs["report"], outputs["status"]
    assert report == outputs["report.json"] and report["schema_version"] == 1
    main_table = next(t for t in report["tables"] if t["kind"] == "main")
    sensitivity = next(t for t in report["tables"] if t["kind"] == "sensitivity")
    assert len(sensitivity["rows"]) == 2 and sum(r["chosen"] for r in sensitivity["rows"]) == 1
    fedavg = next(r for r in main_table["rows"] if r["method"] == "FedAvg")
    assert (fedavg["seeds"], fedavg["finished_seeds"]) == ([0, 1], 2)
    assert sorted(fedavg["jobs"]) == sorted(j["job_id"] for j in status["jobs"] if j["method"] == "FedAvg")
    assert isinstance(fedavg["acc@2.mean"], float) and fedavg["acc@2.n"] == 2


@pytest.mark.parametrize(
    "spoil",
    [
        lambda r: r["tables"][0]["rows"][0].update(seeds="2"),  # the layout before schema_version 1
        lambda r: r["tables"][0]["rows"][0].update(jobs=" ".join(r["jobs"][:2])),
        lambda r: r["tables"][0]["rows"][0].update({"acc@2.mean": "63.1"}),
        lambda r: r.pop("schema_version"),
    ],
)
def test_the_report_schema_refuses_strings_where_numbers_and_lists_are_meant(outputs, spoil):
    report = json.loads(json.dumps(outputs["report"]))
    spoil(report)
    assert not validator("report").is_valid(report)


def test_the_status_schema_refuses_a_seed_as_text(outputs):
    status = json.loads(json.dumps(outputs["status"]))
    status["jobs"][0]["seed"] = "0"
    assert not validator("status").is_valid(status)


def test_a_protocol_report_is_valid_against_the_schema(tmp_path):
    """A FedAc report: its tables are a protocol's, each cell its own text, with the rows' seeds and jobs."""
    from engine.test_fedac_batched import shared_suite
    from fedtest import write_suite
    from report.test_fedac_report import fake_results

    from benchmark.suite.expand import load_jobs

    path = write_suite(tmp_path, shared_suite(["fedac1", "mbsgd"], clients=4).model_dump())
    fake_results(tmp_path / "results", load_jobs(path)[1], [4e-3, 1e-3, 2e-3, 9e-3, 8e-3, "diverged"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["report", str(path), "--results-dir", str(tmp_path / "results"), "--no-tracking", "--json"]) == 0
    report = json.loads(out.getvalue())
    validator("report").validate(report)
    assert {t["kind"] for t in report["tables"]} == {"fedac"}
    assert all(row["jobs"] and isinstance(row["finished_seeds"], int) for t in report["tables"] for row in t["rows"])
