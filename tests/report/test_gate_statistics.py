"""The gate's statistics on hand-computed values, and the baselines it refuses (exit 2)."""

from __future__ import annotations

import json
import math

import pytest

from benchmark.errors import UserError
from benchmark.report import check as gate
from benchmark.store.records import summary_from_json


def summary(method: str, seed: int, acc, rounds_to, status: str = "finished") -> dict:
    return {
        "dataset": "d",
        "method": method,
        "seed": seed,
        "status": status,
        "final_acc": acc,
        "final_ema_acc": acc,
        "metrics": {"rounds_to@50": rounds_to, "bytes_to@50": 1},
    }


def baseline_of(summaries: list[dict]) -> dict:
    return {gate.key(s): gate.comparable(s) for s in map(summary_from_json, summaries)}


def seeds(n: int, lacking: int | None = None, **values) -> dict:
    """A baseline of (d, A) with n seeds whose values are these (else plausible ones); `lacking`: the
    seed without acc@10."""
    plausible = {"final_acc": 60.0, "final_ema_acc": 59.0, "acc@10": 40.0, "rounds_to@80": 12}
    out = {}
    for s in range(n):
        entry = {**plausible, **values}
        if s == lacking:
            entry.pop("acc@10")
        out[f"d / A / seed {s}"] = entry
    return out


def write(tmp_path, content) -> object:
    path = tmp_path / "b.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_welch_tolerance_two_sided_against_hand_computed_values(tmp_path):
    # baseline 60, 62, 64 (mean 62, s² 4); now 56, 58, 60 (mean 58, s² 4): SE = sqrt(4/3 + 4/3) = 1.63299,
    # Welch df = (8/3)² / (2 x (4/3)² / 2) = 4; t(0.99, 4) = 3.7469 -> tolerance 6.119: Δ = -4 is within
    base = [summary("A", s, 60 + 2 * s, 10 + (s == 2)) for s in range(3)]
    path = write(tmp_path, baseline_of(base))
    now = [summary("A", s + 10, 56 + 2 * s, 12 + (s == 1)) for s in range(3)]
    rows = {r.metric: r for r in gate.compare(gate.load_baseline(path), now)}
    acc = rows["final_acc"]
    assert (acc.baseline, acc.now, acc.delta, acc.n_baseline, acc.n_now) == (62, 58, -4, 3, 3)
    assert gate.ALPHA == 0.01 and acc.tolerance == pytest.approx(3.7469 * math.sqrt(8 / 3), abs=1e-3)
    assert acc.verdict == gate.WITHIN
    # rounds_to: lower is better; baseline 10, 10, 11 (s² 1/3), now 12, 13, 12 (s² 1/3): SE = 0.4714, df 4,
    # 3.7469 x 0.4714 = 1.77 -> 2 rounds (whole rounds); Δ = +2 rounds is not beyond it
    rounds = rows["rounds_to@50"]
    assert rounds.delta == pytest.approx(2.0) and rounds.tolerance == 2.0 and rounds.verdict == gate.WITHIN
    worse = [summary("A", s + 10, 50 + 2 * s, ">30") for s in range(3)]  # not reached in 30 rounds: 31
    rows = {r.metric: r for r in gate.compare(gate.load_baseline(path), worse)}
    assert rows["final_acc"].verdict == rows["rounds_to@50"].verdict == gate.REGRESSION
    # only the baseline varies: SE = sqrt(1/9), df = 2, t(0.99, 2) = 6.965 -> 2.32 -> 3 whole rounds
    assert rows["rounds_to@50"].now == 31 and rows["rounds_to@50"].tolerance == 3.0
    better = [summary("A", s + 10, 75 + 2 * s, 10 + (s == 2)) for s in range(3)]
    (acc,) = [r for r in gate.compare(gate.load_baseline(path), better) if r.metric == "final_acc"]
    assert acc.verdict == gate.IMPROVED and acc.failed(allow_improvements=False)
    assert not acc.failed(allow_improvements=True)
    rows = gate.compare(gate.load_baseline(path), better)
    assert gate.summary_line(rows, allow_improvements=False) == (
        "0 regressions, 2 improved (failing: the gate is two-sided), 1 within tolerance"  # final_acc, final_ema_acc
    )
    assert gate.summary_line(rows, allow_improvements=True).startswith("0 regressions, 2 improved (passing: --allow")


def test_seeds_that_scatter_now_cannot_widen_the_tolerance_beyond_the_baselines_spread(tmp_path):
    # baseline 60, 62, 64 (s_b = 2); now 30, 50, 70 (mean 50, s_n = 20): Welch's SE = sqrt(4/3 + 400/3) = 11.6,
    # df = 2.04, tolerance 79 would pass Δ = -12. The baseline's seeds alone: t(0.99, 2) = 6.965 x 2 x
    # sqrt(1/3 + 1/3) = 11.37, and Δ = -12 is beyond it
    path = write(tmp_path, baseline_of([summary("A", s, 60 + 2 * s, 10) for s in range(3)]))
    now = [summary("A", s, acc, 10) for s, acc in enumerate((30, 50, 70))]
    acc = next(r for r in gate.compare(gate.load_baseline(path), now) if r.metric == "final_acc")
    assert acc.tolerance == pytest.approx(6.9646 * 2 * math.sqrt(2 / 3), abs=1e-3) and acc.verdict == gate.REGRESSION
    # a scatter without a shift of the mean beyond it passes: 50, 62, 74 (mean 62)
    now = [summary("A", s, acc, 10) for s, acc in enumerate((50, 62, 74))]
    acc = next(r for r in gate.compare(gate.load_baseline(path), now) if r.metric == "final_acc")
    assert acc.delta == 0 and acc.verdict == gate.WITHIN


def test_equal_values_get_the_floor_and_unfinished_jobs_fail(tmp_path):
    base = [summary("A", s, 70.0, 5) for s in range(3)]
    path = write(tmp_path, baseline_of(base))
    rows = gate.compare(gate.load_baseline(path), [summary("A", s, 69.6, 5) for s in range(3)])
    assert {r.metric: r.tolerance for r in rows} == {"final_acc": 0.5, "final_ema_acc": 0.5, "rounds_to@50": 1.0}
    assert all(r.verdict == gate.WITHIN for r in rows)
    (row,) = gate.compare(gate.load_baseline(path), [summary("A", 0, None, 5, status="diverged")] + base[1:])
    assert row.metric == "status" and row.verdict == "diverged" and row.failed(allow_improvements=True)


@pytest.mark.parametrize(
    "content, message",
    [
        ("{}", "an empty baseline compares nothing"),
        ("[1, 2]", "a JSON list, not a baseline"),
        ("{not json", "not a baseline file"),
        ({"d / A / seed 0": {"final_acc": float("nan")}}, "d / A / seed 0: final_acc = nan is not a finite number"),
        ({"d / A": {"final_acc": 1.0}}, "is not '<dataset> / <method> / seed <n>'"),
        (seeds(3, final_acc=-50.0), "d / A / seed 0: final_acc = -50.0 is not an accuracy in [0, 100]"),
        (seeds(3, **{"acc@10": 100.5}), "d / A / seed 0: acc@10 = 100.5 is not an accuracy in [0, 100]"),
        (seeds(3, **{"rounds_to@80": 2.5}), "d / A / seed 0: rounds_to@80 = 2.5 is not a whole number of rounds"),
        (seeds(3, **{"rounds_to@80": -1}), "d / A / seed 0: rounds_to@80 = -1 is not a whole number of rounds"),
        (seeds(3, final_acc="0"), "d / A / seed 0: final_acc = '0' is not a finite number"),
        (seeds(3, loss=0.3), "d / A / seed 0: loss = 0.3 is not a metric the gate compares"),
        (seeds(3, final_acc=0.0, final_ema_acc=0.0), "d / A: final_acc, final_ema_acc is 0 for every seed"),
        (seeds(3, lacking=2), "d / A / seed 2 lacks acc@10"),
        ({k: {"acc@10": 5.0} for k in seeds(3)}, "d / A / seed 0 lacks final_acc, final_ema_acc"),
        (seeds(2), "d / A has 2 seed(s)"),
    ],
)
def test_baselines_the_gate_cannot_trust_are_errors(tmp_path, content, message):
    with pytest.raises(
        UserError, match="b.json: .*" + message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
    ):
        gate.load_baseline(write(tmp_path, content))


def test_a_tolerance_beyond_what_the_gate_allows_is_refused():
    gate.check_floor(None)
    gate.check_floor(gate.MAX_FLOOR)
    for floor in (5.01, 1e308):
        with pytest.raises(UserError, match=r"--tolerance .* is above 5, the most the gate allows"):
            gate.check_floor(floor)


def test_a_mismatched_baseline_is_an_error_both_ways(tmp_path):
    baseline = {"d / A": {}, "d / B": {}}
    gate.check_matches(baseline, {"d / A"}, {"d / A", "d / B"}, tmp_path)  # --only narrows: fine
    with pytest.raises(UserError, match="the baseline lacks d / C"):
        gate.check_matches(baseline, {"d / A", "d / C"}, {"d / A", "d / B", "d / C"}, tmp_path)
    with pytest.raises(UserError, match="the suite has no d / B"):
        gate.check_matches(baseline, {"d / A"}, {"d / A"}, tmp_path)


def test_a_baseline_is_written_only_from_three_finished_seeds(tmp_path):
    with pytest.raises(UserError, match="at least 3 seeds per method; d / A have fewer"):
        gate.write_baseline(tmp_path / "b.json", [summary("A", s, 60.0, 5) for s in range(2)])
    with pytest.raises(UserError, match="did not finish: d / A / seed 1"):
        gate.write_baseline(
            tmp_path / "b.json", [summary("A", s, 60.0, 5, ["finished", "failed"][s == 1]) for s in range(3)]
        )
    gate.write_baseline(tmp_path / "b.json", [summary("A", s, 60.0 + s, 5) for s in range(3)])
    assert gate.load_baseline(tmp_path / "b.json")["d / A"]["final_acc"] == [60.0, 61.0, 62.0]
