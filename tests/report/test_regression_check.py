"""The CI regression suite reproduces its committed baseline, and a moved number is caught."""

from __future__ import annotations

import json

import pytest
from fedtest import REPO

from benchmark.cli import main
from benchmark.errors import UserError

SUITE = str(REPO / "suites" / "ci.yaml")
BASELINE = REPO / "results" / "baselines" / "ci.json"


def test_ci_suite_matches_baseline_and_regressions_exit_1(tmp_path, capsys):
    results = str(tmp_path / "results")
    args = ["check", SUITE, "--no-tracking", "--results-dir", results]
    assert main(args + ["--baseline", str(BASELINE)]) == 0

    moved = json.loads(BASELINE.read_text())
    first = next(iter(moved))
    moved[first]["final_acc"] += 2.0
    bad = tmp_path / "moved.json"
    bad.write_text(json.dumps(moved))
    assert main(args + ["--baseline", str(bad)]) == 1  # finished jobs are reused, not rerun
    assert f"{first}: final_acc" in capsys.readouterr().out


def test_missing_baseline_exits_2(tmp_path):
    assert (
        main(["check", SUITE, "--no-tracking", "--results-dir", str(tmp_path), "--baseline", str(tmp_path / "x.json")])
        == 2
    )


def _summary(method: str, seed: int, acc: float, rounds_to) -> dict:
    return {
        "dataset": "d",
        "method": method,
        "seed": seed,
        "status": "finished",
        "final_acc": acc,
        "final_ema_acc": acc,
        "metrics": {"rounds_to@50": rounds_to, "bytes_to@50": 1},
    }


def test_tolerances_are_k_times_the_largest_seed_spread(tmp_path):
    from benchmark.report.check import (
        SPREAD_FLOOR,
        SPREAD_K,
        compare,
        load_tolerances,
        spread_tolerances,
        tolerance_path,
    )

    # A: accs 60, 62, 64 -> sample std 2; B: 70, 71, 72, 71 -> 0.82; rounds_to 10, 10, 11 and 5, 5, 5 (">20" not a number)
    summaries = [_summary("A", s, 60 + 2 * s, 10 + (s == 2)) for s in range(3)]
    summaries += [_summary("B", s, 70 + s, 5) for s in range(3)] + [_summary("B", 9, 71, ">20")]
    spread = spread_tolerances(summaries)
    assert spread["tolerance"]["final_acc"] == SPREAD_K * 2.0
    assert SPREAD_FLOOR < spread["tolerance"]["rounds_to@50"] == pytest.approx(1.74)  # 3 x 0.577 rounded up
    assert spread["seeds"] == [0, 1, 2, 9] and spread["values"]["d / A"]["final_acc"] == [60, 62, 64]

    baseline = tmp_path / "b.json"
    baseline.write_text(json.dumps({"d / A / seed 0": {"final_acc": 60.0}}))
    tolerance_path(baseline).write_text(json.dumps(spread))
    tolerances = load_tolerances(baseline)
    assert compare(baseline, [_summary("A", 0, 65.9, 10)], tolerances) == []
    [finding] = compare(baseline, [_summary("A", 0, 66.1, 10)], tolerances)
    assert finding.metric == "final_acc" and "tolerance 6" in str(finding)
    tolerance_path(baseline).write_text("{}")
    with pytest.raises(UserError, match="b.tolerance.json: not a tolerance file"):
        load_tolerances(baseline)


def test_real_data_gate_is_run_by_ci_and_its_baseline_covers_every_job():
    """The FEMNIST gate itself runs in `.ci/run` (minutes); here: its files agree with its suite."""
    from benchmark.report.check import load_tolerances
    from benchmark.suite.expand import load_jobs

    assert "fedbench check suites/ci_femnist.yaml" in (REPO / ".ci" / "run").read_text()
    suite, jobs = load_jobs(REPO / "suites" / "ci_femnist.yaml")
    baseline = REPO / "results" / "baselines" / f"{suite.name}.json"
    expected = {f"{j.dataset_label} / {j.method_label} / seed {j.config.seed}" for j in jobs}
    assert set(json.loads(baseline.read_text())) == expected
    spread = json.loads(baseline.with_name(f"{suite.name}.tolerance.json").read_text())
    assert len(spread["seeds"]) >= 3 and set(load_tolerances(baseline)) >= {"final_acc", "acc@20"}
    assert {m for j in jobs for m in [j.method_label]} == {g.split(" / ")[1] for g in spread["values"]}
