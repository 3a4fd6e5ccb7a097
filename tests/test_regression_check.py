"""The CI regression suite reproduces its committed baseline, and a moved number is caught."""

from __future__ import annotations

import json

from benchmark.cli import main
from fedtest import REPO

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
    assert main(["check", SUITE, "--no-tracking", "--results-dir", str(tmp_path), "--baseline", str(tmp_path / "x.json")]) == 2
