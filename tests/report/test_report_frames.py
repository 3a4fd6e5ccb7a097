"""report/frames.py: a suite's results as DataFrames, from hand-made files (exact values) and from
a real run (consistent with its summaries)."""

from __future__ import annotations

import math

import pytest
from fedtest import tiny_suite, write_suite

from benchmark.cli import main
from benchmark.report.frames import JOB_COLUMNS, ROUND_COLUMNS, jobs_frame, rounds_frame
from benchmark.store.job_dir import JobDir, atomic_write_json
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs


def _jobs(tmp_path, **overrides):
    suite = tiny_suite(methods=["fedavg", {"preset": "fedacg", "grid": {"server.lam": [0.8, 0.9]}}], **overrides)
    return load_jobs(write_suite(tmp_path, suite))[1]


def test_hand_made_results(tmp_path):
    jobs = _jobs(tmp_path)
    by_label = {j.method_label: j for j in jobs}
    assert set(by_label) == {"FedAvg", "FedACG[lam=0.8]", "FedACG[lam=0.9]"}
    root = tmp_path / "results"
    finished = JobDir(Store(root), by_label["FedAvg"].id)
    finished.write_metrics(
        [
            {
                "round": r,
                "test_acc": 10.0 * r,
                "ema_acc": 5.0 * r,
                "bytes_down": 100 * r,
                "bytes_up": 50 * r,
                "wall_s": 0.5 * r,
            }
            for r in (2, 4)
        ]
    )
    atomic_write_json(
        finished.summary,
        {
            "status": "finished",
            "rounds_completed": 4,
            "final_acc": 40.0,
            "final_ema_acc": 20.0,
            "bytes_down": 400,
            "bytes_up": 200,
            "wall_time_s": 2.5,
            "metrics": {"acc@2": 10.0, "rounds_to@30": ">4"},
        },
    )
    # diverged in round 3, an older record format: no wall_s, wall time from the `time` stamps
    diverged = JobDir(Store(root), by_label["FedACG[lam=0.8]"].id)
    diverged.write_metrics(
        [
            {"round": r, "test_acc": 1.0, "ema_acc": 1.0, "bytes_down": 10, "bytes_up": 10, "time": 1000.0 + 3 * r}
            for r in (1, 2)
        ]
    )
    atomic_write_json(
        diverged.summary,
        {
            "status": "diverged",
            "diverged_at_round": 3,
            "rounds_completed": 2,
            "error": "loss is nan\nmore",
            "metrics": {},
        },
    )

    jobs_df = jobs_frame(jobs, Store(root))
    assert list(jobs_df.columns) == [*JOB_COLUMNS, "acc@2", "rounds_to@30"]
    jobs_df = jobs_df.set_index("setting")
    assert dict(jobs_df["status"]) == {
        "FedAvg": "finished",
        "FedACG[lam=0.8]": "diverged",
        "FedACG[lam=0.9]": "not run",
    }
    assert dict(jobs_df["method"]) == {"FedAvg": "FedAvg", "FedACG[lam=0.8]": "FedACG", "FedACG[lam=0.9]": "FedACG"}
    assert jobs_df.loc["FedACG[lam=0.8]", "settings"] == "server.lam=0.8"
    fedavg = jobs_df.loc["FedAvg"]
    assert (fedavg["bytes"], fedavg["wall_s"], fedavg["acc@2"], fedavg["rounds_to@30"]) == (600, 2.5, 10.0, ">4")
    assert jobs_df.loc["FedACG[lam=0.8]", "error"] == "loss is nan"
    assert jobs_df.loc["FedACG[lam=0.8]", "diverged_at_round"] == 3
    assert math.isnan(jobs_df.loc["FedACG[lam=0.9]", "final_acc"])

    rounds = rounds_frame(jobs, Store(root))
    assert list(rounds.columns) == ROUND_COLUMNS
    fedavg_rounds = rounds[rounds.setting == "FedAvg"]
    assert fedavg_rounds[["round", "test_acc", "ema_acc", "bytes", "wall_s"]].values.tolist() == [
        [2, 20.0, 10.0, 300, 1.0],
        [4, 40.0, 20.0, 600, 2.0],
    ]
    # stamps 1003, 1006: 3 s per round, so round 1 ended 3 s in
    assert rounds[rounds.setting == "FedACG[lam=0.8]"]["wall_s"].tolist() == [3.0, 6.0]
    assert set(rounds.status) == {"finished", "diverged"}  # the job not run has no rows


def test_no_results_at_all(tmp_path):
    jobs = _jobs(tmp_path)
    assert rounds_frame(jobs, Store(tmp_path)).empty
    assert list(rounds_frame(jobs, Store(tmp_path)).columns) == ROUND_COLUMNS
    assert (jobs_frame(jobs, Store(tmp_path))["status"] == "not run").all()


def test_frames_of_a_real_run_match_its_summaries(tmp_path):
    suite = tiny_suite()
    suite["defaults"].update(rounds=6, seeds=[0, 1])
    path = write_suite(tmp_path, suite)
    root = tmp_path / "results"
    assert main(["run", str(path), "--no-tracking", "--results-dir", str(root), "-q"]) == 0
    _, jobs = load_jobs(path)
    jobs_df, rounds = jobs_frame(jobs, Store(root)), rounds_frame(jobs, Store(root))
    assert len(jobs_df) == 4 and set(jobs_df.seed) == {0, 1} and (jobs_df.status == "finished").all()
    assert len(rounds) == 4 * 6
    for job_id, per_job in rounds.groupby("job_id"):
        summary = JobDir(Store(root), job_id).read_summary()
        last = per_job.iloc[-1]
        assert per_job["round"].tolist() == list(range(1, 7))
        assert last["bytes"] == summary.bytes_down + summary.bytes_up
        assert (last["test_acc"], last["ema_acc"]) == (summary.final_acc, summary.final_ema_acc)
        assert per_job["wall_s"].is_monotonic_increasing and 0 < last["wall_s"] <= summary.wall_time_s
        assert jobs_df.set_index("job_id").loc[job_id, "acc@2"] == pytest.approx(per_job.iloc[1]["ema_acc"])


@pytest.mark.slow
def test_quickstart_results_and_report(tmp_path):
    """The shipped quickstart (~10 s): frames agree with the summaries, the report shows every method."""
    from fedtest import REPO

    root, path = tmp_path / "results", REPO / "suites" / "quickstart.yaml"
    assert main(["run", str(path), "--no-tracking", "--results-dir", str(root), "-q"]) == 0
    assert main(["report", str(path), "--no-tracking", "--results-dir", str(root)]) == 0
    _, jobs = load_jobs(path)
    rounds, jobs_df = rounds_frame(jobs, Store(root)), jobs_frame(jobs, Store(root))
    assert len(rounds) == 4 * 60 and (jobs_df.status == "finished").all()
    last = rounds.groupby("job_id").last()
    assert (last.ema_acc == jobs_df.set_index("job_id").loc[last.index, "final_ema_acc"]).all()
    md = (root / "quickstart" / "report" / "report.md").read_text()
    assert all(f"| {m} [^synthetic-" in md for m in ("FedAvg", "FedProx", "FedAvgM", "FedACG"))
