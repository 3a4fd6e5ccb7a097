"""The Ray executor gives the local executor's results, mirrors them to the tracker, skips finished jobs."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from fedtest import measured

from benchmark.errors import UserError
from benchmark.run.executor import run_jobs
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import expand
from benchmark.suite.schema import Suite

ray = pytest.importorskip("ray")

SUITE = "raytest"


def jobs_of(methods, model: str = "logistic", **defaults):
    suite = Suite(
        name=SUITE,
        defaults={
            "rounds": 3,
            "num_clients": 6,
            "participation": {"rate": 0.5},
            "local": {"epochs": 1, "batch_size": 10, "lr": 0.05},
            "model": {"name": model},
            **defaults,
        },
        datasets=[
            {
                "name": "synthetic",
                "params": {"num_users": 6, "dim": 10, "num_classes": 3, "max_samples": 80},
                "split": {"kind": "natural"},
            }
        ],
        methods=methods,
    )
    return expand(suite)


class RecordingTracker:
    """Per job, what reached the tracker: its config, the rounds logged, its end (status, files)."""

    def __init__(self):
        self.calls: list[tuple] = []
        self.last: str | None = None

    def start_job(self, job, config):
        self.last = job.id
        self.calls.append(("start", job.id, config["job_id"]))

    def log_records(self, records, job_id=None):
        self.calls.append(("records", job_id or self.last, [r.round for r in records]))

    def end_job(self, summary, files):
        self.calls.append(("end", summary.job_id, summary.status, sorted(f.name for f in files)))

    def of_job(self, job_id: str) -> tuple[list[str], list[int]]:
        """The kinds of calls made for this job, and the rounds it logged in order."""
        mine = [c for c in self.calls if c[1] == job_id]
        return [c[0] for c in mine if c[0] != "records" or c[2]], [r for c in mine if c[0] == "records" for r in c[2]]


def comparable(summary) -> dict:
    return {
        k: v for k, v in summary.to_json().items() if k not in ("wall_time_s", "ray", "threads", "environment")
    }  # where it ran


@pytest.fixture(scope="module")
def local_ray():
    from benchmark.run.ray_worker import code_runtime_env

    ray.init(num_cpus=2, include_dashboard=False, runtime_env=code_runtime_env())
    yield
    ray.shutdown()


@pytest.mark.slow
def test_ray_matches_local_executor_mirrors_and_skips(tmp_path, local_ray, monkeypatch):
    from benchmark.run.ray_executor import run_jobs_ray

    good = jobs_of(["fedavg", "fedacg"])
    (broken,) = jobs_of(["scaffold"], client_state="memmap", checkpoint_every=1)
    for root in ("local", "ray"):  # a checkpoint whose client-state snapshot is gone: fails inside (not a UserError)
        run_jobs([broken], SUITE, Store(tmp_path / root), stop_after=1)
        shutil.rmtree(JobDir(Store(tmp_path / root), broken.id).path / "client_state.checkpoint")
    jobs = [good[0], broken, good[1]]
    local = run_jobs(jobs, SUITE, Store(tmp_path / "local"))
    tracker = RecordingTracker()
    start = time.time()
    monkeypatch.chdir(tmp_path)  # a relative results folder (the CLI default) is the driver's
    remote = run_jobs_ray(jobs, SUITE, Store(Path("ray")), tracker=tracker)
    print(f"run_jobs_ray, 2 jobs: {time.time() - start:.1f}s")

    assert list(remote) == [j.id for j in jobs]
    assert remote[broken.id].status == local[broken.id].status == "failed"
    assert remote[broken.id].error.split(":")[0] == local[broken.id].error.split(":")[0] == "FileNotFoundError"
    for job in good:
        assert remote[job.id].status == "finished"
        assert comparable(remote[job.id]) == comparable(local[job.id])
        ours, theirs = JobDir(Store(tmp_path / "ray"), job.id), JobDir(Store(tmp_path / "local"), job.id)
        assert measured(ours.read_metrics()) == measured(theirs.read_metrics())
        assert ours.is_done()
    # one child run per job, logged while it ran: config, every round once, summary + artifacts
    assert tracker.of_job(broken.id) == (["start", "end"], [])
    for job in good:
        kinds, rounds = tracker.of_job(job.id)
        assert rounds == [1, 2, 3]
        assert kinds[0] == "start" and kinds[-1] == "end" and set(kinds[1:-1]) == {"records"}
        assert ("start", job.id, job.id) in tracker.calls
        files = ["client_acc.json", "config.json", "metrics.jsonl", "summary.json"]  # natural split: per user
        assert ("end", job.id, "finished", files) in tracker.calls

    again = RecordingTracker()
    rerun = run_jobs_ray(jobs, SUITE, Store(tmp_path / "ray"), tracker=again)
    assert [rerun[j.id].skipped for j in jobs] == [True, False, True]  # a failed job is retried
    assert again.of_job(broken.id) == (["start", "end"], [])


@pytest.mark.slow
def test_stopped_under_ray_then_resumed_equals_a_straight_local_run(tmp_path, local_ray):
    """The checkpoint, with memmap client state, travels worker -> driver -> another worker."""
    from benchmark.run.ray_executor import run_jobs_ray

    (job,) = jobs_of(["scaffold"], rounds=4, checkpoint_every=1, client_state="memmap")
    straight = run_jobs([job], SUITE, Store(tmp_path / "local"))[job.id]
    ours = JobDir(Store(tmp_path / "ray"), job.id)
    assert run_jobs_ray([job], SUITE, Store(tmp_path / "ray"), stop_after=2)[job.id].status == "stopped"
    assert ours.checkpoint.exists() and list((ours.path / "client_state.checkpoint").glob("*.f32"))

    resumed = run_jobs_ray([job], SUITE, Store(tmp_path / "ray"))[job.id]
    assert comparable(resumed) == comparable(straight) and resumed.status == "finished"
    assert measured(ours.read_metrics()) == measured(JobDir(Store(tmp_path / "local"), job.id).read_metrics())
    assert not ours.checkpoint.exists() and not (ours.path / "client_state.checkpoint").exists()


@pytest.mark.slow
def test_user_error_in_a_job_stops_the_suite(tmp_path, local_ray):
    from benchmark.run.ray_executor import run_jobs_ray

    with pytest.raises(UserError, match="unknown model 'nope'"):
        run_jobs_ray(jobs_of(["fedavg"], model="nope"), SUITE, Store(tmp_path))


def test_cuda_without_gpus_per_job_is_refused_before_starting_ray(tmp_path):
    from benchmark.run.ray_executor import run_jobs_ray

    with pytest.raises(UserError, match="--gpus-per-job"):
        run_jobs_ray(jobs_of(["fedavg"]), SUITE, Store(tmp_path), device="cuda")


@pytest.mark.slow
def test_a_gpu_request_the_cluster_cannot_meet_is_refused_instead_of_hanging(tmp_path, local_ray):
    from benchmark.run.ray_executor import run_jobs_ray

    with pytest.raises(UserError, match="--gpus-per-job 0.5: the Ray cluster has 0 GPU"):
        run_jobs_ray(jobs_of(["fedavg"]), SUITE, Store(tmp_path), device="cuda", gpus_per_job=0.5)


@pytest.mark.slow
def test_a_job_another_process_trains_is_waited_for_not_trained_twice(tmp_path, local_ray, caplog):
    import threading

    from benchmark.run.ray_executor import run_jobs_ray
    from benchmark.store.job_store import job_lock

    held, free = jobs_of(["fedavg", "fedacg"])
    other = job_lock(Store(tmp_path), held.id)  # as another fedbench process training `held` would
    other.acquire()

    def other_finishes() -> None:  # it ends once this driver has done the job it could start
        while not JobDir(Store(tmp_path), free.id).is_done():
            time.sleep(0.1)
        other.release()

    threading.Thread(target=other_finishes, daemon=True).start()
    tracker = RecordingTracker()
    summaries = run_jobs_ray([held, free], SUITE, Store(tmp_path), tracker=tracker)
    assert [summaries[j.id].status for j in (held, free)] == ["finished", "finished"]
    calls = [c[:2] for c in tracker.calls]  # `held` started only after the other process let it go
    assert calls.index(("end", free.id)) < calls.index(("start", held.id))
    assert calls.count(("start", held.id)) == 1
