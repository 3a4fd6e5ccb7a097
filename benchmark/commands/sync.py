"""`fedbench sync`: a suite's results on disk mirrored to MLflow (never runs a job)."""

from __future__ import annotations

from pathlib import Path

from benchmark.commands.output import note_unselected, out
from benchmark.commands.tracking import open_tracker, summarise
from benchmark.errors import UserError
from benchmark.store.layout import Store


def sync_suite(select, suite_file: Path, seeds, results_dir: Path, tracking_uri) -> None:
    from benchmark.report.on_disk import jobs_with_seeds_on_disk
    from benchmark.store.job_store import migrate_to_job_store

    results = Store(results_dir)  # built once, here
    migrate_to_job_store(results)  # sync writes (MLflow, from the store): old-layout jobs move in first
    suite, jobs = jobs_with_seeds_on_disk(select, results, seeds)
    tracker = open_tracker(suite.name, tracking_uri, results, suite_file)
    if tracker.uri is None:
        raise UserError(f"MLflow store {tracking_uri or 'default'} cannot be used; nothing was mirrored")
    try:
        healed = tracker.heal(jobs)
        summarise(tracker, suite, jobs, results)
    finally:
        tracker.close("FINISHED")
    if tracker.offline:
        raise UserError(f"MLflow store {tracker.uri} stopped answering; rerun `fedbench sync` when it is back")
    out.print(f"MLflow {tracker.uri}: {healed or 0} job(s) mirrored, {len(jobs)} checked", markup=False)
    note_unselected(suite, jobs, results)
