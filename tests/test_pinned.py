"""Behaviour pinned before the engine was reshaped (tests/pinned.py made the fixtures and says
when to regenerate them): every shipped suite keeps its job ids, and results written by the
fedbench of that time (job folders in results/<suite>/, before the job store) can still be read,
resumed, reported and mirrored to MLflow: the first command moves them into the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fedtest import measured
from pinned import FROZEN, FROZEN_SUITE, JOB_IDS, frozen_copy, shipped_job_ids

from benchmark.cli import main
from benchmark.report.status import suite_status
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

SUITE = "frozen"


def test_every_shipped_suite_expands_to_its_pinned_job_ids():
    pinned = json.loads(JOB_IDS.read_text())
    now = shipped_job_ids()
    assert sorted(now) == sorted(pinned), "a suite was added or removed: pin its ids on purpose (tests/pinned.py)"
    changed = {
        suite: {"new": sorted(set(now[suite]) - set(ids)), "gone": sorted(set(ids) - set(now[suite]))}
        for suite, ids in pinned.items()
        if now[suite] != ids
    }
    assert not changed


def frozen_jobs() -> dict:
    """Method label -> job of the frozen suite."""
    return {job.method_label: job for job in load_jobs(FROZEN_SUITE)[1]}


def frozen_dir(root: Path, method: str) -> JobDir:
    """The job's folder in the store under `root` (a copy that a command has migrated, or a new run)."""
    return JobDir(Store(root / "results"), frozen_jobs()[method].id)


def as_frozen(method: str) -> JobDir:
    """The job's folder in the fixture itself, as the fedbench of that time laid it out."""
    return JobDir.at(FROZEN / "results" / SUITE / frozen_jobs()[method].id)


def run(suite: Path, results: Path, *extra: str) -> int:
    """One thread, as the fixture's jobs ran (their summaries: the probe chose 1): float32 sums split over
    another count of threads round differently, and the probe's choice moves with the machine's load."""
    return main(["run", str(suite), "--results-dir", str(results), "-q", "--threads", "1", *extra])


# A loss is a float32 value: the fixture's were computed on another CPU, whose matrix kernels round the last bit
# of a float32 sum differently (measured: 1.5e-7 relative on a Xeon with AMX, every accuracy equal).
FLOAT32_REL = 1e-6


def same_numbers(got: list[dict], want: list[dict]) -> bool:
    """Equal rounds and metrics (wall-clock fields aside): losses to FLOAT32_REL, the rest to 1e-9 relative."""

    def close(g: dict, w: dict) -> bool:
        rel = {k: FLOAT32_REL if k.endswith("_loss") else 1e-9 for k in w}
        return g.keys() == w.keys() and all(g[k] == pytest.approx(w[k], rel=rel[k]) for k in w)

    return len(got) == len(want) and all(close(g, w) for g, w in zip(measured(got), measured(want)))


@pytest.fixture
def frozen(tmp_path) -> Path:
    return frozen_copy(tmp_path / "frozen")


def test_the_frozen_fixture_holds_a_finished_a_stopped_and_an_interrupted_job():
    assert not (FROZEN / "results" / "jobs").exists(), "the fixture stays in the layout before the store"
    statuses = {m: as_frozen(m).read_summary() for m in frozen_jobs()}
    assert {m: s and s.status for m, s in statuses.items()} == {
        "FedAvg": "finished",
        "FedACG": "stopped",
        "FedProx": None,
    }
    assert [as_frozen(m).load_checkpoint()["simulation"]["round"] for m in ("FedACG", "FedProx")] == [2, 3]


def test_status_reads_the_frozen_results(frozen, capsys):
    assert main(["status", str(frozen / "suite.yaml"), "--results-dir", str(frozen / "results")]) == 0
    assert "1 done" in capsys.readouterr().out
    jobs = frozen_jobs()
    got = {s.job.method_label: s for s in suite_status(list(jobs.values()), Store(frozen / "results"))}
    finished = as_frozen("FedAvg").read_summary()
    assert (got["FedAvg"].state, got["FedAvg"].rounds_done, got["FedAvg"].acc) == ("done", 6, finished.final_acc)
    assert (got["FedACG"].state, got["FedACG"].rounds_done) == ("pending", 2)
    assert "stopped early" in got["FedACG"].note
    assert (got["FedProx"].state, got["FedProx"].rounds_done) == ("pending", 3)
    assert "resumes from its checkpoint" in got["FedProx"].note


def test_resuming_the_frozen_jobs_gives_the_numbers_of_a_straight_run(frozen, tmp_path):
    suite = frozen / "suite.yaml"
    assert run(suite, frozen / "results", "--no-tracking") == 0
    assert run(suite, tmp_path / "straight" / "results", "--no-tracking") == 0
    for method in ("FedACG", "FedProx"):
        resumed = frozen_dir(frozen, method).read_metrics()
        straight = frozen_dir(tmp_path / "straight", method).read_metrics()
        assert [r.round for r in resumed] == [1, 2, 3, 4, 5, 6] and same_numbers(resumed, straight), method
    assert frozen_dir(frozen, "FedAvg").read_summary() == as_frozen("FedAvg").read_summary()  # skipped


def test_a_straight_run_today_gives_the_frozen_numbers(tmp_path):
    """The finished job and the rounds before each checkpoint, as the code of that time computed them."""
    assert run(FROZEN_SUITE, tmp_path / "results", "--no-tracking") == 0
    for method in frozen_jobs():
        frozen_records = as_frozen(method).read_metrics()
        today = frozen_dir(tmp_path, method).read_metrics()[: len(frozen_records)]
        assert same_numbers(today, frozen_records), method


def test_report_reads_the_frozen_results(frozen):
    assert main(["report", str(frozen / "suite.yaml"), "--results-dir", str(frozen / "results"), "--no-tracking"]) == 0
    report = (frozen / "results" / SUITE / "report" / "report.md").read_text()
    finished = as_frozen("FedAvg").read_summary()
    assert f"{finished.final_ema_acc:.2f}" in report and "stopped" in report


def _child_runs(uri: str) -> dict:
    """Job id -> (MLflow status, test_acc per round) of the frozen suite's job runs."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name(SUITE).experiment_id
    runs = client.search_runs([experiment], "tags.`fedbench.kind` = 'job'")
    return {
        r.data.tags["fedbench.job_id"]: (
            r.info.status,
            [m.value for m in sorted(client.get_metric_history(r.info.run_id, "test_acc"), key=lambda m: m.step)],
        )
        for r in runs
    }


def test_a_run_mirrors_the_frozen_jobs_into_their_mlflow_store(frozen):
    uri = f"sqlite:///{frozen / 'mlflow.db'}"
    jobs = frozen_jobs()
    before = _child_runs(uri)
    assert {m: before[j.id][0] for m, j in jobs.items()} == {
        "FedAvg": "FINISHED",
        "FedACG": "KILLED",
        "FedProx": "KILLED",
    }
    assert run(frozen / "suite.yaml", frozen / "results", "--tracking-uri", uri) == 0
    after = _child_runs(uri)
    assert len(after) == 3
    for method, job in jobs.items():
        status, accs = after[job.id]
        on_disk = [r.test_acc for r in frozen_dir(frozen, method).read_metrics()]
        assert status == "FINISHED" and accs == pytest.approx(on_disk, rel=1e-12), method
