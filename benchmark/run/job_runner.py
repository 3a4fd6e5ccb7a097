"""Run one job into its results directory: resume from a checkpoint if one exists, write
metrics as they come, and finish with summary.json (and final_model.pt when it finished)."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from benchmark.engine.rounds import Diverged
from benchmark.metrics import client_spread, ema_update, summarise
from benchmark.run.callbacks import (
    Callbacks,
    Checkpoints,
    HeartbeatFile,
    MetricsFile,
    RoundCallback,
    Stamp,
    Tracking,
    save_checkpoint,
    tracked_seconds,
)
from benchmark.run.code_fingerprint import code_fingerprint
from benchmark.run.code_parts import code_versions, job_code
from benchmark.run.environment import environment
from benchmark.run.feed import fed
from benchmark.run.threads import settle
from benchmark.run.tracking import NullTracker
from benchmark.store.job_dir import JobDir, atomic_torch_save, atomic_write_json
from benchmark.store.job_status import DIVERGED, FINISHED, STOPPED
from benchmark.store.records import ClientAccuracy, Divergence, JobSummary, RoundRecord
from benchmark.suite.expand import Job

if TYPE_CHECKING:  # the engine (torch) is imported when a job runs: the executors' registry imports this module
    from benchmark.engine.round_tally import ClientsDone
    from benchmark.engine.simulation import JobRounds

log = logging.getLogger(__name__)


class JobInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during a job: says what was kept of it."""


class StopAtRoundEnd:
    """While a job trains, the first Ctrl-C (or SIGTERM) asks it to stop when the current round
    ends, with a checkpoint there, so nothing is lost; a second one stops at once. Outside the
    main thread (Ray workers) signals stay as they are."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.requested = False
        self._previous: dict = {}

    def _request(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        log.warning("stopping when this round ends, with a checkpoint (press Ctrl-C again to stop at once)")

    def __enter__(self) -> StopAtRoundEnd:
        if threading.current_thread() is threading.main_thread():
            self._previous = {sig: signal.signal(sig, self._request) for sig in self.SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def job_config_json(job: Job, suite: str) -> dict:
    return {"job_id": job.id, "suite": suite, "grid_point": job.grid_point, **job.config.model_dump(mode="json")}


def eval_rounds(job: Job, upto: int) -> list[int]:
    """The rounds ≤ `upto` that the job evaluates (what metrics.jsonl must hold at a checkpoint)."""
    return [r for r in range(1, upto + 1) if job.config.evaluates(r)]


def resume_point(job: Job, jobdir: JobDir, sim: JobRounds) -> list[RoundRecord]:
    """Load the checkpoint into `sim` and return the metric records up to it; a checkpoint whose
    metrics are incomplete (a truncated metrics.jsonl) cannot be continued: restart, saying so."""
    checkpoint = jobdir.load_checkpoint()
    if checkpoint is None:
        return []
    if problem := sim.misfit(checkpoint["simulation"]):
        jobdir.set_aside_checkpoint(f"it does not fit this job: {problem}")
        return []
    at = checkpoint["simulation"]["round"]
    if checkpoint.get("data_fingerprint", sim.data_fingerprint) != sim.data_fingerprint:
        log.warning(
            "%s was written on other data (fingerprint %s, now %s); restarting job %s from round 0",
            jobdir.checkpoint,
            checkpoint["data_fingerprint"],
            sim.data_fingerprint,
            job.id,
        )
        jobdir.checkpoint.unlink()
        return []
    records = [r for r in jobdir.read_metrics() if r.round <= at]
    if [r.round for r in records] != eval_rounds(job, at):
        log.warning(
            "%s lacks rounds before the checkpoint's round %d; restarting job %s from round 0",
            jobdir.metrics,
            at,
            job.id,
        )
        jobdir.checkpoint.unlink()
        return []
    sim.load_state_dict(checkpoint["simulation"])
    return records


def validation_summary(job: Job, sim: JobRounds, records: list[RoundRecord]) -> dict:
    """select: on validation: the last round's EMA of the validation accuracy, and what was held out."""
    if job.config.select.on != "validation":  # (a protocol's batched jobs never are)
        return {}
    ema = None
    for r in records:
        ema = ema_update(ema, r.val_acc) if r.val_acc is not None else ema
    from benchmark.engine.simulation import Simulation

    assert isinstance(sim, Simulation)  # only the per-client engine holds data out
    data = sim.setup.data
    held = {"holdout": job.config.select.holdout, "held_out": len(data.validation)}
    return {"final_val_ema_acc": ema, "validation": {**held, "too_small": list(data.too_small)}}


def job_summary(
    job: Job,
    suite: str,
    sim: JobRounds,
    records: list[RoundRecord],
    diverged: Diverged | None,
    threads: dict | None = None,
) -> JobSummary:
    about = dict(
        job_id=job.id,
        suite=suite,
        dataset=job.dataset_label,
        method=job.method_label,
        seed=job.config.seed,
        data_fingerprint=sim.data_fingerprint,
        bytes_down=sim.progress.bytes_down,
        bytes_up=sim.progress.bytes_up,
        execution=sim.execution.chosen,
        execution_probe=sim.execution.probe,
        local_step=sim.execution.local_step or None,
        vmap_chunk=sim.execution.vmap_chunk,
        threads=threads,
        code_fingerprint=code_fingerprint(),
        code_parts=job_code(job.config),
        code_versions=code_versions(job.config),
    )
    last = records[-1] if records else None
    if diverged:  # no accuracy: what a NaN model "scores" is the argmax of NaN logits
        return JobSummary(
            **about,
            status=DIVERGED,
            rounds_completed=diverged.round - 1,
            diverged=Divergence(diverged.round, str(diverged), last and last.to_json()),
        )
    return JobSummary(
        **about,
        status=FINISHED if sim.progress.round >= job.config.rounds else STOPPED,
        rounds_completed=sim.progress.round,
        final_acc=last and last.test_acc,
        final_ema_acc=last and last.ema_acc,
        final_subopt=last and last.subopt,
        **validation_summary(job, sim, records),
        metrics=summarise([r.to_json() for r in records], job.config.metrics, job.config.rounds),
    )


def run_job(
    job: Job,
    suite: str,
    jobdir: JobDir,
    device: str = "cpu",
    tracker=None,
    stop_after: int | None = None,
    simulation_for: Callable | None = None,
    on_checkpoint: Callable[[int], None] | None = None,
    callbacks: list[RoundCallback] = (),
    on_clients: Callable[[ClientsDone], None] | None = None,
) -> JobSummary:
    """Run (or resume) `job`; returns its summary. `stop_after` stops early (tests, CI smoke).
    `simulation_for(job)` may supply the simulation (a protocol's replay, run/protocol_batches.py); None: build it.
    `on_checkpoint(round)` is called after each checkpoint is written (the Ray executor ships it); `callbacks`
    after the job's own (progress display, Ray relay); `on_clients`, on a thread of its own (run/feed.py), with
    how far a round's training has come after each client (or chunk of clients) it trains."""
    tracker = tracker or NullTracker()
    # a tracker that times its calls has them left out of the wall time (callbacks.tracked_seconds)
    start, tracked_before = time.monotonic(), tracked_seconds(tracker)

    def tracked() -> float:  # MLflow time (an outage's timeouts included) is no training time
        return tracked_seconds(tracker) - tracked_before

    config = job_config_json(job, suite)
    atomic_write_json(jobdir.config, config)
    tracker.start_job(job, config)  # first, so a job that fails while building still has its run
    sim: JobRounds | None = simulation_for and simulation_for(job)
    if sim is None:  # the engine (torch) is imported only for a job that trains here
        from benchmark.engine.setup import build_simulation

        sim = build_simulation(job.config, device, jobdir.path / "client_state")
    threads = settle(sim)
    resumed = resume_point(job, jobdir, sim)
    metrics = MetricsFile(jobdir)
    c = job.config
    stop = StopAtRoundEnd()
    effects = Callbacks(
        [
            Stamp(resumed, tracker),
            metrics,
            Tracking(tracker, jobdir),
            HeartbeatFile(jobdir.heartbeat, c.rounds, sim.progress.round),
        ]
    )
    # metrics.jsonl and the tracker are flushed first, so they hold every round a checkpoint covers
    checkpoints = Checkpoints(
        jobdir, sim, c.rounds, c.checkpoint_every, c.checkpoint_minutes, stop, effects.on_flush, on_checkpoint
    )
    effects.callbacks += [checkpoints, *callbacks]

    diverged = None
    try:
        effects.on_start(resumed)
        with stop, fed(on_clients) as counts:
            for done in sim.rounds(stop_after, counts):  # each round handed out, written here
                if done.record is not None:
                    effects.on_eval(RoundRecord.from_json(done.record))
                effects.on_round(done.round)
                if stop.requested and done.round < c.rounds:
                    raise KeyboardInterrupt
    except Diverged as err:
        diverged = err
    except KeyboardInterrupt:
        at, kept = sim.progress.round, checkpoints.saved_round
        where = (
            "its checkpoint there is kept"
            if kept == at
            else f"it resumes from its checkpoint at round {kept}"
            if kept
            else "no checkpoint yet, it restarts from round 0"
        )
        raise JobInterrupted(f"job {job.id} stopped at round {at}; {where}") from None
    finally:
        effects.on_close()
    effects.on_flush()
    summary = job_summary(job, suite, sim, metrics.records, diverged, threads)
    if summary.status == FINISHED:
        atomic_torch_save(jobdir.model, sim.final_state_dict())
        if sim.client_accuracy:  # before summary.json, which marks the job's files complete
            jobdir.write_client_accuracy(ClientAccuracy(c.rounds, sim.client_accuracy))
            summary.client_acc = client_spread(list(sim.client_accuracy.values()))
    elif summary.status == STOPPED:  # stopped early on purpose: keep a checkpoint to resume from
        save_checkpoint(jobdir, sim)
    summary.wall_time_s = round(time.monotonic() - start - tracked(), 3)
    summary.environment = environment(device)
    atomic_write_json(jobdir.summary, summary.to_json())
    if summary.status != STOPPED:  # resume material is no longer needed (memmap client state can be large)
        jobdir.discard_checkpoint()
    effects.on_end(summary)
    if stop.requested:  # Ctrl-C in the job's last round: it finished, the suite stops here
        raise JobInterrupted(f"job {job.id} ended ({summary.status}) in the round Ctrl-C came in")
    return summary
