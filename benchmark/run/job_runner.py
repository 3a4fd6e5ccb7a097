"""Run one job into its results directory: resume from a checkpoint if one exists, write
metrics as they come, and finish with summary.json and final_model.pt."""

from __future__ import annotations

import time
from typing import Callable

from benchmark.engine.metrics import summarise
from benchmark.engine.setup import build_simulation
from benchmark.run.results import FINISHED, JobDir, atomic_torch_save, atomic_write_json
from benchmark.run.tracking import NullTracker
from benchmark.suite.expand import Job


def job_config_json(job: Job, suite: str) -> dict:
    return {"job_id": job.id, "suite": suite, "grid_point": job.grid_point, **job.config.model_dump(mode="json")}


def run_job(job: Job, suite: str, jobdir: JobDir, device: str = "cpu", tracker=None,
            on_eval: Callable[[dict], None] | None = None, stop_after: int | None = None,
            on_checkpoint: Callable[[int], None] | None = None) -> dict:
    """Run (or resume) `job`; returns its summary. `stop_after` stops early (tests, CI smoke);
    `on_checkpoint(round)` is called after each checkpoint is written (the Ray executor ships it)."""
    tracker = tracker or NullTracker()
    start = time.time()
    config = job_config_json(job, suite)
    atomic_write_json(jobdir.config, config)
    tracker.start_job(job, config)  # first, so a job that fails while building still has its run
    sim = build_simulation(job.config, device, jobdir.path / "client_state")

    records: list[dict] = []
    checkpoint = jobdir.load_checkpoint()
    if checkpoint is not None:
        sim.load_state_dict(checkpoint["simulation"])
        records = [r for r in jobdir.read_metrics() if r["round"] <= sim.progress.round]
    jobdir.write_metrics(records)
    tracker.log_records(records)

    every = job.config.checkpoint_every
    pending: list[dict] = []

    def flush() -> None:
        jobdir.write_metrics(records)
        tracker.log_records(pending)
        pending.clear()

    def eval_cb(rec: dict) -> None:
        records.append(rec)
        pending.append(rec)
        if len(pending) >= 50:
            flush()
        if on_eval:
            on_eval(rec)

    def round_cb(r: int) -> None:
        if every and r % every == 0 and r < job.config.rounds:
            flush()
            atomic_torch_save(jobdir.checkpoint, {"simulation": sim.state_dict()})
            if on_checkpoint:
                on_checkpoint(r)

    sim.run(on_eval=eval_cb, on_round=round_cb, stop_after=stop_after)
    flush()
    done = sim.progress.round >= job.config.rounds
    if not done:  # stopped early on purpose: keep a checkpoint to resume from
        atomic_torch_save(jobdir.checkpoint, {"simulation": sim.state_dict()})
    else:
        atomic_torch_save(jobdir.model, sim.final_state_dict())
    summary = {
        "job_id": job.id,
        "suite": suite,
        "dataset": job.dataset_label,
        "method": job.method_label,
        "seed": job.config.seed,
        "status": FINISHED if done else "stopped",
        "rounds_completed": sim.progress.round,
        "final_acc": records[-1]["test_acc"] if records else None,
        "final_ema_acc": records[-1]["ema_acc"] if records else None,
        "final_subopt": records[-1].get("subopt") if records else None,
        "metrics": summarise(records, job.config.metrics, job.config.rounds),
        "bytes_down": sim.progress.bytes_down,
        "bytes_up": sim.progress.bytes_up,
        "wall_time_s": round(time.time() - start, 3),
    }
    atomic_write_json(jobdir.summary, summary)
    if done:
        jobdir.drop_resume_material()
    tracker.end_job(summary, [jobdir.config, jobdir.metrics, jobdir.summary])
    return summary
