"""The Ray executor gives the local executor's results, mirrors them to the tracker, skips finished jobs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from benchmark.errors import UserError
from benchmark.run.executor import run_jobs
from benchmark.run.results import JobDir
from benchmark.suite.expand import expand
from benchmark.suite.schema import Suite
from fedtest import measured

ray = pytest.importorskip("ray")

SUITE = "raytest"


def jobs_of(methods, model: str = "logistic"):
    suite = Suite(
        name=SUITE,
        defaults={"rounds": 3, "num_clients": 6, "participation": {"rate": 0.5},
                  "local": {"epochs": 1, "batch_size": 10, "lr": 0.05}, "model": {"name": model}},
        datasets=[{"name": "synthetic", "params": {"num_users": 6, "dim": 10, "num_classes": 3, "max_samples": 80},
                   "split": {"kind": "natural"}}],
        methods=methods,
    )
    return expand(suite)


class RecordingTracker:
    def __init__(self):
        self.calls: list[tuple] = []

    def start_job(self, job, config):
        self.calls.append(("start", job.id, config["job_id"]))

    def log_records(self, records):
        self.calls.append(("records", [r["round"] for r in records]))

    def end_job(self, summary, files):
        self.calls.append(("end", summary["job_id"], summary["status"], sorted(f.name for f in files)))


def comparable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k != "wall_time_s"}


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_ray_matches_local_executor_mirrors_and_skips(tmp_path, local_ray, monkeypatch):
    from benchmark.run.ray_executor import run_jobs_ray

    jobs = jobs_of(["fedavg", "fedavgm", "fedacg"])
    good, broken = [jobs[0], jobs[2]], jobs[1]
    for root in ("local", "ray"):  # a checkpoint lacking FedAvgM's momentum: the job fails inside (not a UserError)
        bad = JobDir(tmp_path / root, SUITE, broken.id).checkpoint
        bad.parent.mkdir(parents=True)
        torch.save({"simulation": {"round": 0, "theta": torch.zeros(33), "server_state": {}, "ema": None,
                                   "bytes_down": 0, "bytes_up": 0, "clients": {}}}, bad)
    local = run_jobs(jobs, SUITE, tmp_path / "local")
    tracker = RecordingTracker()
    start = time.time()
    monkeypatch.chdir(tmp_path)  # a relative results folder (the CLI default) is the driver's
    remote = run_jobs_ray(jobs, SUITE, Path("ray"), tracker=tracker)
    print(f"run_jobs_ray, 2 jobs: {time.time() - start:.1f}s")

    assert list(remote) == [j.id for j in jobs]
    assert remote[broken.id]["status"] == local[broken.id]["status"] == "failed"
    assert remote[broken.id]["error"] == local[broken.id]["error"]
    for job in good:
        assert remote[job.id]["status"] == "finished"
        assert comparable(remote[job.id]) == comparable(local[job.id])
        ours, theirs = JobDir(tmp_path / "ray", SUITE, job.id), JobDir(tmp_path / "local", SUITE, job.id)
        assert measured(ours.read_metrics()) == measured(theirs.read_metrics())
        assert ours.is_done()
    # one child run per job, replayed from its files: config, every round, summary + artifacts
    assert [c[0] for c in tracker.calls] == ["start", "records", "end"] * 3
    assert ("end", broken.id, "failed", ["config.json", "metrics.jsonl", "summary.json"]) in tracker.calls
    for job in good:
        assert ("start", job.id, job.id) in tracker.calls
        assert ("end", job.id, "finished", ["config.json", "metrics.jsonl", "summary.json"]) in tracker.calls
    rounds_logged = {start[1]: records[1] for start, records in zip(tracker.calls[::3], tracker.calls[1::3])}
    assert rounds_logged == {good[0].id: [1, 2, 3], broken.id: [], good[1].id: [1, 2, 3]}

    again = RecordingTracker()
    rerun = run_jobs_ray(jobs, SUITE, tmp_path / "ray", tracker=again)
    assert [bool(rerun[j.id].get("skipped")) for j in jobs] == [True, False, True]  # a failed job is retried
    assert [c[0] for c in again.calls] == ["start", "records", "end"]


@pytest.mark.slow
def test_user_error_in_a_job_stops_the_suite(tmp_path, local_ray):
    from benchmark.run.ray_executor import run_jobs_ray

    with pytest.raises(UserError, match="unknown model 'nope'"):
        run_jobs_ray(jobs_of(["fedavg"], model="nope"), SUITE, tmp_path)


def test_cuda_without_gpus_per_job_is_refused_before_starting_ray(tmp_path):
    from benchmark.run.ray_executor import run_jobs_ray

    with pytest.raises(UserError, match="--gpus-per-job"):
        run_jobs_ray(jobs_of(["fedavg"]), SUITE, tmp_path, device="cuda")


@pytest.mark.slow
def test_a_gpu_request_the_cluster_cannot_meet_is_refused_instead_of_hanging(tmp_path, local_ray):
    from benchmark.run.ray_executor import run_jobs_ray

    with pytest.raises(UserError, match="--gpus-per-job 0.5: the Ray cluster has 0 GPU"):
        run_jobs_ray(jobs_of(["fedavg"]), SUITE, tmp_path, device="cuda", gpus_per_job=0.5)
