"""The CI gate on suites/ci.yaml: its own seeds reproduce the baseline exactly, other seeds (a
reshuffle) pass, a halved or doubled learning rate and a halved FedAvg server step fail; bad input
is exit 2. Code changes made in a copy of the code or a plugin: test_gate_code_changes.py."""

from __future__ import annotations

import json
from xml.etree import ElementTree

import jsonschema
import pytest
from fedtest import REPO

from benchmark.cli import main
from benchmark.fl.servers import Average
from benchmark.report.check import MIN_SEEDS, load_baseline
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store

SUITE = str(REPO / "suites" / "ci.yaml")
BASELINE = REPO / "results" / "baselines" / "ci.json"
CHECK = ["check", SUITE, "--no-tracking", "--threads", "1", "--quiet", "--baseline", str(BASELINE)]


def printed_json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_the_baseline_seeds_reproduce_it_exactly_with_junit_json_and_reuse(tmp_path, capsys):
    results, junit = tmp_path / "results", tmp_path / "junit.xml"
    assert main(CHECK + ["--results-dir", str(results), "--junit-xml", str(junit), "--json"]) == 0
    report = printed_json(capsys)
    jsonschema.validate(report, json.loads((REPO / "docs" / "schemas" / "check.schema.json").read_text()))
    assert report["verdict"] == "passed" and report["summary"] == "0 regressions, 20 within tolerance"
    assert len(report["rows"]) == 4 * 5 and all(r["delta"] == 0 and r["n_now"] == 3 for r in report["rows"])
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), len(suite.findall("testcase"))) == ("20", "0", 20)

    # the results folder holds these jobs now: reused only when asked, and only those of this code
    assert main(CHECK + ["--results-dir", str(results)]) == 2
    assert "check runs every job afresh; pass --reuse" in capsys.readouterr().err
    moved = json.loads(BASELINE.read_text())
    for seed in range(3):
        moved[f"synthetic / FedAvg / seed {seed}"]["final_acc"] += 2.0
    (tmp_path / "moved.json").write_text(json.dumps(moved))
    other_code = next((results / "ci").glob("*/summary.json"))
    other_code.write_text(json.dumps({**json.loads(other_code.read_text()), "code_fingerprint": "0.0.1+old"}))
    moved_check = CHECK[:-1] + [str(tmp_path / "moved.json"), "--results-dir", str(results), "--reuse"]
    assert main(moved_check + ["--junit-xml", str(junit)]) == 1
    out = " ".join(capsys.readouterr().out.split())
    row = out[out.index("synthetic / FedAvg │ final_acc │") :].split("synthetic")[1]
    assert "│ 83.70 │ 81.70 │ -2.00 │ ±" in row and row.rstrip(" │").endswith("regression"), row
    assert "1 regression, 19 within tolerance" in out
    [failure] = ElementTree.parse(junit).getroot().iter("failure")
    assert failure.get("message") == "synthetic / FedAvg: final_acc regression"
    job_id = other_code.parent.name  # found through the suite's view; the job's folder is in the store
    assert (results / "jobs" / f"{job_id}.code-0.0.1+old").is_dir()  # set aside, rerun
    assert JobDir(Store(results), job_id).read_summary().code_fingerprint != "0.0.1+old"


def test_other_seeds_than_the_baselines_pass(capsys):
    assert main(CHECK + ["--seeds", "3,4,5", "--json"]) == 0
    assert printed_json(capsys)["summary"] == "0 regressions, 20 within tolerance"


@pytest.mark.parametrize(
    "lr, verdict",
    [("0.005", "regression"), ("0.02", "improved")],  # 1.5-1.9 points below / ~0.9 above, tolerances 0.5-1.0
)
def test_a_halved_or_doubled_learning_rate_fails(capsys, lr, verdict):
    assert main(CHECK + ["--only", "FedAvg", "--set", f"local.lr={lr}", "--json"]) == 1
    failed = {r["metric"]: r["verdict"] for r in printed_json(capsys)["rows"] if r["failed"]}
    assert set(failed) >= {"acc@30", "final_acc", "final_ema_acc"} and set(failed.values()) == {verdict}, failed
    if verdict == "improved":  # one-sided on request: better numbers pass
        assert main(CHECK + ["--only", "FedAvg", "--set", f"local.lr={lr}", "--allow-improvements"]) == 0
        assert "4 improved (passing: --allow-improvements)" in " ".join(capsys.readouterr().out.split())


def test_a_halved_fedavg_server_step_fails(monkeypatch, capsys):
    """A code break the job ids cannot see: FedAvg's server step θ + Δ̄ becomes θ + Δ̄/2."""
    update = Average.update
    monkeypatch.setattr(
        Average, "update", lambda self, theta, *a: ((theta + 0.5 * (update(self, theta, *a)[0] - theta)), a[0])
    )
    assert main(CHECK + ["--only", "FedAvg", "--json"]) == 1
    report = printed_json(capsys)
    assert report["verdict"] == "failed" and {r["metric"] for r in report["rows"] if r["failed"]} >= {"acc@30"}


@pytest.mark.parametrize(
    "args, content, message",
    [
        (["--tolerance", "nan"], None, "'nan' is not a finite number"),
        (["--tolerance", "-1"], None, "-1.0 is not in the range x>=0"),
        ([], "{}", "an empty baseline compares nothing"),
        ([], '{"synthetic / FedAvg / seed 0": {"final_acc": NaN}}', "final_acc = nan is not a finite number"),
        ([], "only FedAvg", "the baseline lacks synthetic / FedACG, synthetic / FedAvgM"),
        ([], "with X", "the suite has no synthetic / X"),
        (["--seeds", "0,1"], None, "synthetic / FedAvg: 2 seed(s); the gate compares means over at least 3 seeds"),
        (["--reuse"], None, "--reuse reuses the jobs of --results-dir"),
        (["--update", "--only", "FedAvg"], None, "--update writes the suite's own baseline"),
        (["--update", "--json"], None, "--update writes a baseline and compares nothing: drop --junit-xml and --json"),
    ],
)
def test_input_the_gate_cannot_trust_exits_2_before_any_job(tmp_path, capsys, args, content, message):
    baseline = BASELINE
    if content is not None:
        baseline = tmp_path / "b.json"
        full = json.loads(BASELINE.read_text())
        if content == "only FedAvg":
            content = json.dumps({k: v for k, v in full.items() if "FedAvg /" in k or "FedProx" in k})
        elif content == "with X":
            content = json.dumps(
                {**full, **{f"synthetic / X / seed {s}": {"final_acc": 1.0, "final_ema_acc": 1.0} for s in range(3)}}
            )
        baseline.write_text(content)
    assert main(CHECK[:-1] + [str(baseline)] + args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert message in err and "Traceback" not in err, err


def test_the_gate_baselines_hold_three_seeds_of_every_method_of_their_suites():
    """The FEMNIST gate itself runs in `.ci/run` (minutes); here: its files agree with its suite."""
    from benchmark.suite.expand import load_jobs

    assert "fedbench check suites/ci_femnist.yaml" in (REPO / ".ci" / "run").read_text()
    for name in ("ci", "ci_femnist"):
        suite, jobs = load_jobs(REPO / "suites" / f"{name}.yaml")
        baseline = load_baseline(REPO / "results" / "baselines" / f"{suite.name}.json")
        assert set(baseline) == {f"{j.dataset_label} / {j.method_label}" for j in jobs}
        assert all(len(values) >= MIN_SEEDS for metrics in baseline.values() for values in metrics.values())
        assert len({j.config.seed for j in jobs}) >= MIN_SEEDS
