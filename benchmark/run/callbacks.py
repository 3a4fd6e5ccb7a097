"""What a running job does besides training, one callback each: metrics.jsonl, the MLflow mirror,
heartbeat.json, resume checkpoints, the wall-time stamp, and whoever else listens (progress display, a Ray relay).

`run_job` calls every callback in order: `on_start` with the records a resumed job starts from,
`on_eval` per evaluated round, `on_round` after every round, `on_flush` every FLUSH_EVERY
evaluations, before a checkpoint and at the end, `on_end` with the summary once it is written,
and `on_close` however the job stops (also on Ctrl-C or a crash)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from benchmark.store.heartbeat import Heartbeat
from benchmark.store.job_dir import JobDir, atomic_torch_save
from benchmark.store.records import JobSummary, RoundRecord

if TYPE_CHECKING:  # for annotations only: the modules that run jobs import the engine
    from benchmark.engine.simulation import JobRounds

FLUSH_EVERY = 50  # evaluated rounds between metrics.jsonl / MLflow flushes (checkpoints flush too)


class RoundCallback:
    """The protocol; each callback overrides what it needs."""

    def on_start(self, records: list[RoundRecord]) -> None: ...
    def on_eval(self, rec: RoundRecord) -> None: ...
    def on_round(self, round_: int) -> None: ...
    def on_flush(self) -> None: ...
    def on_end(self, summary: JobSummary) -> None: ...
    def on_close(self) -> None: ...


class Callbacks(RoundCallback):
    """Several callbacks as one, flushing them together every FLUSH_EVERY evaluations."""

    def __init__(self, callbacks: list[RoundCallback]):
        self.callbacks, self.unflushed = callbacks, 0

    def on_start(self, records):
        for c in self.callbacks:
            c.on_start(records)

    def on_eval(self, rec):
        for c in self.callbacks:
            c.on_eval(rec)
        self.unflushed += 1
        if self.unflushed >= FLUSH_EVERY:
            self.on_flush()

    def on_round(self, round_):
        for c in self.callbacks:
            c.on_round(round_)

    def on_flush(self):
        self.unflushed = 0
        for c in self.callbacks:
            c.on_flush()

    def on_end(self, summary):
        for c in self.callbacks:
            c.on_end(summary)

    def on_close(self):
        for c in self.callbacks:
            c.on_close()


class MetricsFile(RoundCallback):
    """metrics.jsonl: every record of the job, rewritten whole (atomically) at each flush."""

    def __init__(self, jobdir: JobDir):
        self.jobdir, self.records = jobdir, []

    def on_start(self, records):
        self.records = list(records)
        if self.records or self.jobdir.metrics.exists():  # drop records past the checkpoint; a fresh job has none
            self.on_flush()

    def on_eval(self, rec):
        self.records.append(rec)

    def on_flush(self):
        self.jobdir.write_metrics([r.to_json() for r in self.records])


class Tracking(RoundCallback):
    """The MLflow mirror (or NullTracker): new rounds in batches, the summary and files at the end."""

    def __init__(self, tracker, jobdir: JobDir):
        self.tracker, self.jobdir, self.pending = tracker, jobdir, []

    def on_start(self, records):
        self.tracker.log_records(list(records))  # the tracker skips rounds its run already has

    def on_eval(self, rec):
        self.pending.append(rec)

    def on_flush(self):
        self.tracker.log_records(self.pending)
        self.pending = []

    def on_end(self, summary):
        self.tracker.end_job(summary, self.jobdir.mirrored_files)


class HeartbeatFile(RoundCallback):
    """heartbeat.json while the job runs (`fedbench status` reads it)."""

    def __init__(self, path, rounds: int, start_round: int):
        self.heartbeat = Heartbeat(path, rounds, start_round)

    def on_eval(self, rec):
        self.heartbeat.beat(rec.round, rec.to_json())

    def on_round(self, round_):
        self.heartbeat.beat(round_)

    def on_close(self):
        self.heartbeat.stop()


class Stamp(RoundCallback):
    """Stamps each record with when it was measured and the training seconds so far, carried
    across resumes (a replay brings its own wall_s), less the seconds the tracker spent in MLflow
    calls, which are not training."""

    def __init__(self, records: list[RoundRecord], tracker=None):
        self.trained_before = (records[-1].wall_s or 0.0) if records else 0.0
        # tracking time is counted from here, as the clock is: what it spent before (start_job) was
        # never on this clock, and subtracting it too made the first rounds' wall_s negative
        self.since, self.tracker, self.tracked_before = time.monotonic(), tracker, tracked_seconds(tracker)

    def on_eval(self, rec):
        rec.time = round(time.time(), 3)
        if rec.wall_s is None:
            tracked = tracked_seconds(self.tracker) - self.tracked_before
            rec.wall_s = round(self.trained_before + time.monotonic() - self.since - tracked, 3)


def tracked_seconds(tracker) -> float:
    """The seconds `tracker` spent in its calls so far (NullTracker's and the MLflow mirror's `seconds`);
    a relay of calls to elsewhere (the Ray worker's) spends none here."""
    return getattr(tracker, "seconds", 0.0)


class Shown(RoundCallback):
    """Each evaluated round of `job`, on the suite's progress display (run/progress.py)."""

    def __init__(self, progress, job):
        self.progress, self.job = progress, job

    def on_eval(self, rec):
        self.progress.evaluated(self.job, rec)


def save_checkpoint(jobdir: JobDir, sim: JobRounds) -> None:
    atomic_torch_save(jobdir.checkpoint, {"simulation": sim.state_dict(), "data_fingerprint": sim.data_fingerprint})


class Checkpoints(RoundCallback):
    """checkpoint.pt every `every` rounds, every `minutes`, and when a stop is requested (never in
    the last round: the job's end writes what is needed). `flush` runs first, so metrics.jsonl
    holds every round the checkpoint covers; `shipped(round)` after (the Ray executor ships it)."""

    def __init__(
        self,
        jobdir: JobDir,
        sim: JobRounds,
        job_rounds: int,
        every: int,
        minutes: float,
        stop,
        flush: Callable[[], None],
        shipped: Callable[[int], None] | None = None,
    ):
        self.jobdir, self.sim, self.job_rounds, self.every, self.minutes = jobdir, sim, job_rounds, every, minutes
        self.stop, self.flush, self.shipped = stop, flush, shipped
        self.saved_round, self.saved_at = sim.progress.round, time.monotonic()

    def on_round(self, round_):
        due = (self.every and round_ % self.every == 0) or (
            self.minutes and time.monotonic() - self.saved_at >= 60 * self.minutes
        )
        if (due or self.stop.requested) and round_ < self.job_rounds:
            self.flush()
            save_checkpoint(self.jobdir, self.sim)
            self.saved_round, self.saved_at = round_, time.monotonic()
            if self.shipped:
                self.shipped(round_)
