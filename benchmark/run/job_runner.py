"""Run one job into its results directory: resume from a checkpoint if one exists, write
metrics as they come, and finish with summary.json (and final_model.pt when it finished)."""

from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Callable

from benchmark.metrics import summarise
from benchmark.engine.setup import build_simulation
from benchmark.run.heartbeat import Heartbeat
from benchmark.engine.simulation import Diverged, Simulation
from benchmark.run.results import JobDir, atomic_torch_save, atomic_write_json
from benchmark.run.status import DIVERGED, FINISHED, STOPPED
from benchmark.run.tracking import NullTracker
from benchmark.suite.expand import Job

log = logging.getLogger(__name__)
FLUSH_EVERY = 50  # evaluated rounds between metrics.jsonl / MLflow flushes (checkpoints flush too)


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

    def __enter__(self) -> "StopAtRoundEnd":
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
    c = job.config
    return [r for r in range(1, upto + 1) if r % c.eval_every == 0 or r == c.rounds]


def resume_point(job: Job, jobdir: JobDir, sim: Simulation) -> list[dict]:
    """Load the checkpoint into `sim` and return the metric records up to it; a checkpoint whose
    metrics are incomplete (a truncated metrics.jsonl) cannot be continued: restart, saying so."""
    checkpoint = jobdir.load_checkpoint()
    if checkpoint is None:
        return []
    if problem := sim.misfit(checkpoint["simulation"]):
        jobdir.set_aside_checkpoint(f"it does not fit this job: {problem}")
        return []
    at = checkpoint["simulation"]["round"]
    if checkpoint.get("data_fingerprint", sim.data.fingerprint) != sim.data.fingerprint:
        log.warning("%s was written on other data (fingerprint %s, now %s); restarting job %s from round 0",
                    jobdir.checkpoint, checkpoint["data_fingerprint"], sim.data.fingerprint, job.id)
        jobdir.checkpoint.unlink()
        return []
    records = [r for r in jobdir.read_metrics() if r["round"] <= at]
    if [r["round"] for r in records] != eval_rounds(job, at):
        log.warning("%s lacks rounds before the checkpoint's round %d; restarting job %s from round 0",
                    jobdir.metrics, at, job.id)
        jobdir.checkpoint.unlink()
        return []
    sim.load_state_dict(checkpoint["simulation"])
    return records


def save_checkpoint(jobdir: JobDir, sim: Simulation) -> None:
    atomic_torch_save(jobdir.checkpoint, {"simulation": sim.state_dict(), "data_fingerprint": sim.data.fingerprint})


def run_job(job: Job, suite: str, jobdir: JobDir, device: str = "cpu", tracker=None,
            on_eval: Callable[[dict], None] | None = None, stop_after: int | None = None,
            simulation_for: Callable | None = None, on_checkpoint: Callable[[int], None] | None = None) -> dict:
    """Run (or resume) `job`; returns its summary. `stop_after` stops early (tests, CI smoke).
    `simulation_for(job)` may supply the simulation (the batched FedAc engine's replay); None: build it.
    `on_checkpoint(round)` is called after each checkpoint is written (the Ray executor ships it)."""
    tracker = tracker or NullTracker()
    start = time.time()
    config = job_config_json(job, suite)
    atomic_write_json(jobdir.config, config)
    tracker.start_job(job, config)  # first, so a job that fails while building still has its run
    sim = (simulation_for and simulation_for(job)) or build_simulation(job.config, device, jobdir.path / "client_state")
    records = resume_point(job, jobdir, sim)
    jobdir.write_metrics(records)
    tracker.log_records(records)  # the tracker skips rounds its run already has

    every, minutes = job.config.checkpoint_every, job.config.checkpoint_minutes
    pending: list[dict] = []
    saved = {"round": sim.progress.round, "at": time.monotonic()}

    def flush() -> None:
        jobdir.write_metrics(records)
        tracker.log_records(pending)
        pending.clear()

    # training seconds so far, carried across resumes (the report's accuracy-vs-time axis)
    trained_before, trained_since = (records[-1].get("wall_s", 0.0) if records else 0.0), time.monotonic()

    def eval_cb(rec: dict) -> None:
        heartbeat.beat(rec["round"], rec)
        rec["time"] = round(time.time(), 3)  # when it was measured: MLflow plots against it
        rec.setdefault("wall_s", round(trained_before + time.monotonic() - trained_since, 3))  # a replay has its own
        records.append(rec)
        pending.append(rec)
        if len(pending) >= FLUSH_EVERY:
            flush()
        if on_eval:
            on_eval(rec)

    def round_cb(r: int) -> None:
        heartbeat.beat(r)
        due = (every and r % every == 0) or (minutes and time.monotonic() - saved["at"] >= 60 * minutes)
        if (due or stop.requested) and r < job.config.rounds:
            flush()
            save_checkpoint(jobdir, sim)
            saved.update(round=r, at=time.monotonic())
            if on_checkpoint:
                on_checkpoint(r)
        if stop.requested and r < job.config.rounds:
            raise KeyboardInterrupt

    heartbeat = Heartbeat(jobdir.heartbeat, job.config.rounds, sim.progress.round)
    diverged = None
    try:
        with StopAtRoundEnd() as stop:
            sim.run(on_eval=eval_cb, on_round=round_cb, stop_after=stop_after)
    except Diverged as err:
        diverged = err
    except KeyboardInterrupt:
        at, kept = sim.progress.round, saved["round"]
        where = ("its checkpoint there is kept" if kept == at else f"it resumes from its checkpoint at round {kept}"
                 if kept else "no checkpoint yet, it restarts from round 0")
        raise JobInterrupted(f"job {job.id} stopped at round {at}; {where}") from None
    finally:
        heartbeat.stop()
    flush()
    summary = {
        "job_id": job.id, "suite": suite, "dataset": job.dataset_label, "method": job.method_label,
        "seed": job.config.seed, "data_fingerprint": sim.data.fingerprint,
        "bytes_down": sim.progress.bytes_down, "bytes_up": sim.progress.bytes_up,
    }
    if diverged:  # no accuracy: what a NaN model "scores" is the argmax of NaN logits
        summary.update(status=DIVERGED, diverged_at_round=diverged.round, error=str(diverged),
                       rounds_completed=diverged.round - 1, last_finite=records[-1] if records else None,
                       final_acc=None, final_ema_acc=None, final_subopt=None, metrics={})
    else:
        done = sim.progress.round >= job.config.rounds
        summary.update(
            status=FINISHED if done else STOPPED, rounds_completed=sim.progress.round,
            final_acc=records[-1]["test_acc"] if records else None,
            final_ema_acc=records[-1]["ema_acc"] if records else None,
            final_subopt=records[-1].get("subopt") if records else None,
            metrics=summarise(records, job.config.metrics, job.config.rounds),
        )
        if done:
            atomic_torch_save(jobdir.model, sim.final_state_dict())
        else:  # stopped early on purpose: keep a checkpoint to resume from
            save_checkpoint(jobdir, sim)
    summary["wall_time_s"] = round(time.time() - start, 3)
    atomic_write_json(jobdir.summary, summary)
    if summary["status"] != STOPPED:  # resume material is no longer needed (memmap client state can be large)
        jobdir.discard_checkpoint()
    tracker.end_job(summary, [jobdir.config, jobdir.metrics, jobdir.summary])
    if stop.requested:  # Ctrl-C in the job's last round: it finished, the suite stops here
        raise JobInterrupted(f"job {job.id} ended ({summary['status']}) in the round Ctrl-C came in")
    return summary
