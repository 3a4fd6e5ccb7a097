"""EMA smoothing, acc@R, rounds_to@X and bytes-to-target, computed by hand."""

from __future__ import annotations

from itertools import accumulate

import pytest
from fedtest import job_config

from benchmark.engine.setup import build_simulation
from benchmark.metrics import acc_at, ema_update, evaluated_round, rounds_to, summarise


def ema_series(values):
    """The running EMA as the simulation builds it, one ema_update per evaluated round."""
    return list(accumulate(values, ema_update))


def records(accs, every=1, bytes_per_round=10):
    ema = ema_series(accs)
    return [
        {
            "round": (i + 1) * every,
            "test_acc": a,
            "ema_acc": e,
            "bytes_down": bytes_per_round * (i + 1) * every,
            "bytes_up": 2 * bytes_per_round * (i + 1) * every,
        }
        for i, (a, e) in enumerate(zip(accs, ema))
    ]


def test_ema_starts_at_first_value_then_decays_by_point_nine():
    assert ema_series([50.0, 60.0, 70.0]) == pytest.approx([50.0, 51.0, 52.9])


def test_acc_at_and_rounds_to():
    recs = records([10.0, 90.0, 90.0, 90.0])  # ema: 10, 18, 25.2, 31.68
    assert acc_at(recs, 3) == pytest.approx(25.2)
    assert acc_at(recs, 5) is None  # not reached
    assert rounds_to(recs, 25.0) == 3
    assert rounds_to(recs, 40.0) is None


def test_acc_at_with_sparse_evaluation_uses_last_evaluated_round():
    recs = records([10.0, 20.0], every=5)  # rounds 5, 10
    assert acc_at(recs, 7) == pytest.approx(10.0)
    assert acc_at(recs, 10) == pytest.approx(11.0)


def test_summary_reports_not_reached_and_bytes_to_target():
    recs = records([10.0, 90.0, 90.0, 90.0])
    out = summarise(recs, ["acc@2", "rounds_to@25", "rounds_to@99"], rounds=4)
    assert out["acc@2"] == pytest.approx(18.0)
    assert out["rounds_to@25"] == 3 and out["bytes_to@25"] == 3 * 10 + 3 * 20
    assert out["rounds_to@99"] == ">4" and out["bytes_to@99"] is None


def test_acc_raw_is_the_unsmoothed_accuracy_at_round_r():
    recs = records([10.0, 90.0, 90.0, 90.0])  # raw 90 at round 2, ema 18
    out = summarise(recs, ["acc_raw@2", "acc@2"], rounds=4)
    assert out["acc_raw@2"] == pytest.approx(90.0) and out["acc@2"] == pytest.approx(18.0)


def test_unknown_metric_names_the_grammar():
    with pytest.raises(ValueError, match="acc@R, acc_raw@R or rounds_to@X"):
        summarise([], ["acc_ema@3"], rounds=4)


def test_rounds_are_evaluated_only_where_a_metric_needs_them():
    def evaluated(metrics, rounds=10, every=2):
        return [r for r in range(1, rounds + 1) if evaluated_round(r, rounds, every, metrics)]

    assert evaluated(["acc_raw@3", "acc_raw@7"]) == [3, 7, 10]  # raw accuracies: those rounds and the last
    assert evaluated(["acc_raw@3", "acc@5"]) == [2, 4, 6, 8, 10]  # a smoothed metric needs the whole grid
    assert evaluated(["rounds_to@50"]) == evaluated([]) == [2, 4, 6, 8, 10]


def test_a_raw_only_job_trains_every_round_but_evaluates_its_metric_rounds():
    records = build_simulation(job_config(metrics=["acc_raw@2"], rounds=4)).run()
    assert [r["round"] for r in records] == [2, 4]
