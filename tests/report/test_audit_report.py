"""A number measured with a setting other than the paper's / the suite's is shown beside the
paper's, never scored against it: no Δ, a ‡ mark and a note naming the setting."""

from __future__ import annotations

import pandas as pd
from fedtest import tiny_suite, write_suite

from benchmark.cli import main
from benchmark.store.job_dir import JobDir, atomic_write_json
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs
from benchmark.suite.overrides import Overrides


def _summary(acc2: float) -> dict:
    return {
        "status": "finished",
        "rounds_completed": 4,
        "final_acc": acc2,
        "final_ema_acc": acc2,
        "metrics": {"acc@2": acc2},
    }


def _report(tmp_path, sets: tuple[str, ...]) -> pd.DataFrame:
    suite = tiny_suite(methods=["fedavg"])
    suite["datasets"][0]["reference"] = {
        "source": "hand-made",
        "metrics": ["acc@2"],
        "rows": {"FedAvg": [45.0]},
        "stated": {"all": {"local.batch_size": 8}},
    }
    path = write_suite(tmp_path, suite)
    _, jobs = load_jobs(path, Overrides.parse(sets))
    for job in jobs:
        atomic_write_json(JobDir(Store(tmp_path / "results"), job.id).summary, _summary(40.0))
    args = ["report", str(path), "--results-dir", str(tmp_path / "results"), "--no-tracking"]
    assert main(args + [a for s in sets for a in ("--set", s)]) == 0
    out = tmp_path / "results" / "tiny" / "report"
    return pd.read_csv(out / "tables" / "synthetic.csv", dtype=str, keep_default_na=False), out


def test_a_cell_run_as_the_paper_states_is_scored(tmp_path):
    table, out = _report(tmp_path, ())
    row = table.iloc[0]
    assert (row["acc@2.mean"], row["acc@2.paper"], row["acc@2.delta"]) == ("40.0", "45.0", "-5.0")
    assert "40.00 (paper 45.00, Δ −5.00)" in (out / "report.md").read_text()


def test_a_cell_run_with_another_setting_is_marked_not_scored(tmp_path):
    table, out = _report(tmp_path, ("local.batch_size=4",))
    row = table.iloc[0]
    assert (row["acc@2.mean"], row["acc@2.paper"], row["acc@2.delta"]) == ("40.0", "45.0", "")
    assert row["acc@2.unscored"] == "local.batch_size 8 -> 4"
    assert "40.00 (paper 45.00 ‡)" in (out / "report.md").read_text()
    assert (
        "‡ FedAvg: not scored against the paper, the jobs ran local.batch_size 8 -> 4"
        in (out / "report.md").read_text()
    )


def test_a_setting_no_paper_line_covers_is_named_too(tmp_path):
    table, out = _report(tmp_path, ("local.lr=0.5",))
    assert table.iloc[0]["acc@2.delta"] == "" and "40.00 (paper 45.00 ‡)" in (out / "report.md").read_text()
    assert "the jobs ran local.lr 0.05 -> 0.5" in (out / "report.md").read_text()


def test_an_assumed_setting_and_another_papers_numbers_are_shown_under_the_table(tmp_path):
    suite = tiny_suite(methods=["fedavg"])
    suite["datasets"][0]["reference"] = {
        "source": "hand-made",
        "metrics": ["acc@2"],
        "rows": {"FedAvg": [45.0]},
        "chosen": [{"setting": "participation.rate", "value": 0.5, "reason": "caption lost", "status": "assumed"}],
        "also_printed": "Paper B prints 52.0 for this protocol",
    }
    path = write_suite(tmp_path, suite)
    _, jobs = load_jobs(path)
    for job in jobs:
        atomic_write_json(JobDir(Store(tmp_path / "results"), job.id).summary, _summary(40.0))
    assert main(["report", str(path), "--results-dir", str(tmp_path / "results"), "--no-tracking"]) == 0
    md = (tmp_path / "results" / "tiny" / "report" / "report.md").read_text()
    assert "assumed, not stated by the paper: participation.rate = 0.5 — caption lost" in md
    assert "another paper prints other numbers: Paper B prints 52.0 for this protocol" in md
