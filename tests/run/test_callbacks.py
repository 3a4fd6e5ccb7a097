"""run_job's per-round side effects are callbacks; its records and summaries are typed, with the
JSON forms on disk unchanged."""

from __future__ import annotations

import json
import time

from fedtest import tiny_suite, write_suite

from benchmark.run.callbacks import RoundCallback
from benchmark.run.job_runner import run_job
from benchmark.run.tracking import NullTracker, tracking_may_fail
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.store.records import Divergence, JobSummary, RoundRecord
from benchmark.suite.expand import load_jobs

LINE = {
    "round": 2,
    "test_acc": 50.0,
    "test_loss": 1.1,
    "train_loss": 1.2,
    "ema_acc": 45.0,
    "bytes_down": 80,
    "bytes_up": 80,
    "time": 1700000000.5,
    "wall_s": 0.25,
}


def test_a_round_record_reads_and_writes_its_metrics_line_unchanged():
    rec = RoundRecord.from_json(LINE)
    assert (rec.round, rec.ema_acc, rec.subopt) == (2, 45.0, None)
    assert json.dumps(rec.to_json()) == json.dumps(LINE)  # same keys, same order, no null subopt
    foreign = {**LINE, "subopt": 0.5, "written_by_another_version": [1]}
    assert RoundRecord.from_json(foreign).to_json() == foreign


def test_a_diverged_summary_has_no_accuracy_and_says_where():
    about = dict(job_id="j", suite="s", dataset="d", method="m", seed=0, data_fingerprint="f", bytes_down=1, bytes_up=1)
    out = JobSummary(**about, status="diverged", rounds_completed=2, diverged=Divergence(3, "NaN", LINE)).to_json()
    assert out["diverged_at_round"] == 3 and out["last_finite"] == LINE and out["final_acc"] is None
    assert "diverged" not in JobSummary(**about, status="finished", rounds_completed=3).to_json()


class Recorder(RoundCallback):
    def __init__(self):
        self.events = []

    def on_start(self, records):
        self.events.append(("start", len(records)))

    def on_eval(self, rec):
        self.events.append(("eval", rec.round))

    def on_round(self, round_):
        self.events.append(("round", round_))

    def on_end(self, summary):
        self.events.append(("end", summary.status))

    def on_close(self):
        self.events.append(("close",))


def test_a_callback_sees_every_round_and_the_end(tmp_path):
    suite = tiny_suite(methods=["fedavg"])
    suite["defaults"].update(rounds=4, eval_every=2)
    s, (job,) = load_jobs(write_suite(tmp_path, suite))
    recorder = Recorder()
    summary = run_job(job, s.name, JobDir(Store(tmp_path), job.id), callbacks=[recorder])
    assert summary.status == "finished"
    assert recorder.events == [
        ("start", 0),
        ("round", 1),
        ("eval", 2),
        ("round", 2),
        ("round", 3),
        ("eval", 4),
        ("round", 4),
        ("close",),
        ("end", "finished"),
    ]


class FarStore(NullTracker):
    """A tracker whose every call takes 10 s of the (fake) monotonic clock, timed by the real wrapper."""

    offline = False
    writer = None  # no writer thread: every call is a job's

    def __init__(self, clock):
        self.clock = clock

    @tracking_may_fail
    def start_job(self, job, config):
        self.clock.offset += 10.0

    @tracking_may_fail
    def log_records(self, records, job_id=None):
        self.clock.offset += 10.0


class Clock:
    def __init__(self, real):
        self.real, self.offset = real, 0.0

    def __call__(self):
        return self.real() + self.offset


def test_wall_s_leaves_out_tracking_time_once_and_is_never_negative(tmp_path, monkeypatch):
    """start_job's time was subtracted from the first rounds although their clock began after it."""
    clock = Clock(time.monotonic)
    monkeypatch.setattr(time, "monotonic", clock)
    suite = tiny_suite(methods=["fedavg"])
    suite["defaults"].update(rounds=4, checkpoint_minutes=0)
    s, (job,) = load_jobs(write_suite(tmp_path, suite))
    jobdir = JobDir(Store(tmp_path), job.id)
    summary = run_job(job, s.name, jobdir, tracker=FarStore(clock))
    walls = [r.wall_s for r in jobdir.read_metrics()]
    assert clock.offset >= 30  # start_job and a log per flush: each 10 s the records must not count
    assert len(walls) == 4 and walls == sorted(walls) and 0 <= walls[0] and walls[-1] < 10, walls
    assert walls[-1] <= summary.wall_time_s < 10
