"""The tracker's writer thread: finished jobs whose run was not created while they ran are mirrored in
batches, beside the jobs that follow.

A job gets its MLflow run while it runs only once it has run for LIVE_AFTER_S (then the UI shows it
RUNNING, with its rounds as they are flushed); a shorter job (FedAc's batched jobs take milliseconds
each) is queued when it ends and written with others: in one transaction by mlflow_batch.py where the
store allows it, else call by call (JobMirror.mirror). The queue holds only jobs whose summary.json is
on disk, so a process killed with work queued loses no result: the next `fedbench run` or `fedbench
sync` mirrors those jobs from results/ (tracking.MlflowTracker.heal). At exit the queue is written
within CLOSE_WAIT_S, or the run says how many jobs it left to that healing.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmark.store.records import FailedSummary, JobSummary

LIVE_AFTER_S = 10.0  # a job running this long gets its run now, so it shows while it runs
BATCH_JOBS = 200  # queued jobs written at once (one transaction)
FLUSH_EVERY_S = 5.0  # the longest a finished job waits in the queue while the run goes on
TICK_S = 1.0
CLOSE_WAIT_S = 120.0  # at exit, the longest the queue's writing may take


@dataclass
class Finished:
    """A job that ended with no run yet: what its run is written from."""

    job: object  # the Job
    summary: JobSummary | FailedSummary
    files: list[Path]
    queued: float = field(default_factory=time.monotonic)


class Writer(threading.Thread):
    """Writes queued jobs through `write(batch) -> jobs left` (their lock held elsewhere: retried) and
    calls `tick()` every TICK_S (the tracker gives long jobs their run there)."""

    def __init__(self, write, tick):
        super().__init__(name="fedbench-mlflow-writer", daemon=True)  # daemon: a kill must not wait for it
        self.write, self.tick = write, tick
        self.queue: list[Finished] = []
        self.wake = threading.Condition()
        self.closing = False
        self.left: list[Finished] = []  # what closing could not write (its lock held by another process)
        self.in_flight = 0
        self.first = None  # called first, in this thread (the tracker's connection); False: nothing to write to

    def put(self, item: Finished) -> None:
        with self.wake:
            self.queue.append(item)
            if len(self.queue) >= BATCH_JOBS:
                self.wake.notify()

    def pending(self) -> int:
        with self.wake:
            return len(self.queue) + len(self.left) + self.in_flight

    def run(self) -> None:
        if self.first is not None and not self.first():
            return
        while True:
            with self.wake:
                if not self.closing:
                    self.wake.wait(TICK_S)
                closing, queue = self.closing, self.queue
                due = (
                    closing
                    or len(queue) >= BATCH_JOBS
                    or (queue and time.monotonic() - queue[0].queued >= FLUSH_EVERY_S)
                )
                batch = queue[:BATCH_JOBS] if due else []
                del queue[: len(batch)]
                self.in_flight = len(batch)
            self.tick()
            left = self.write(batch) if batch else []
            with self.wake:
                self.in_flight = 0
                if closing:
                    self.left += left
                    if not self.queue:
                        return
                else:  # a lock still held (this process's runner holds a job's until just after it ends): again
                    self.queue[:0] = left

    def close(self) -> int:
        """Write what is queued (waiting at most CLOSE_WAIT_S); how many jobs are left unwritten."""
        with self.wake:
            self.closing = True
            self.wake.notify()
        self.join(CLOSE_WAIT_S)
        return self.pending()
