"""`fedbench run`: every unfinished job of a suite, then its result tables; the exit status says
whether jobs failed (2) or every job of a method diverged (1)."""

from __future__ import annotations

from pathlib import Path

import click

from benchmark import gc_startup
from benchmark.commands.output import err_console, out, print_outcomes, progress, table_columns
from benchmark.commands.tracking import closed_with_outcome, open_tracker, summarise
from benchmark.errors import UserError


def run_suite(
    loaded: tuple,
    suite_file: Path,
    results_dir: Path,
    tracking_uri,
    no_tracking: bool,
    device: str,
    stop_after,
    threads,
    executor: str,
    cluster: tuple,
    quiet: bool,
    verbose: bool,
    keep_stale: bool = False,
    table: tuple = (None, False),
) -> None:
    """`loaded`: the selected suite and its jobs (cli_options.load_selected); `cluster`: ClusterOptions' fields (Ray address, GPUs and CPUs per job, data URIs, ship limit);
    `keep_stale`: reuse done jobs whose code changed since (marked), rather than train them again;
    `table`: --columns and --wide, checked before any job runs."""
    from benchmark.report.status import LISTED_UP_TO
    from benchmark.report.table import check_columns_before_run
    from benchmark.run.executor_base import EXECUTORS, ClusterOptions
    from benchmark.run.stale import stale_line
    from benchmark.run.threads import request
    from benchmark.run.tracking import NullTracker, already_mirrored
    from benchmark.run.triage import done_jobs, reuse, still_done
    from benchmark.store.done_index import DoneIndex
    from benchmark.store.job_dir import check_writable
    from benchmark.store.job_store import open_results
    from benchmark.store.layout import Store

    store = Store(results_dir)  # the results folder, built once: whatever it hands on asks it for its paths
    request(threads)  # torch's CPU threads for every job; None: each job's model is probed (run/threads.py)
    suite, jobs = loaded  # loaded first: its plugins may add executors
    columns = table_columns(*table)
    check_columns_before_run(jobs, columns)
    runner = EXECUTORS.require(executor)(ClusterOptions(*cluster))
    runner.keep_stale = keep_stale
    # jobs provably done are reused after one pass that only reads (run/triage.py); the executor, its
    # device and the data checks see only the rest, so a run with nothing to do loads no data, no torch
    index = DoneIndex(store)  # what earlier runs found done (store/done_index.py)
    done = done_jobs(jobs, store, keep_stale, len(jobs) > LISTED_UP_TO, index)
    todo = [job for job in jobs if job.id not in done]
    dev = runner.device(device, todo) if todo or device != "auto" else None  # (checking one may import torch)
    runner.check(todo)
    check_writable(open_results(store, suite.name))
    reporter = progress(jobs, quiet, verbose)
    # nothing to train into a store that provably mirrors the suite already: no MLflow at all (run/mlflow_in_sync.py);
    # else the store opens beside the first job, which need not wait for it (run/tracking.py)
    tracker = (
        NullTracker()
        if no_tracking
        else (not todo and already_mirrored(suite.name, tracking_uri, store, suite_file, jobs))
        or open_tracker(suite.name, tracking_uri, store, suite_file, background=True)
    )
    with closed_with_outcome(tracker):
        tracker.heal(jobs)  # results/ is the source of truth: finished jobs missing in MLflow are mirrored
        if not no_tracking:  # healing parses every record of what it mirrors, and sets a damaged job aside
            done = still_done(store, done)
            todo = [job for job in jobs if job.id not in done]
        reuse(store, suite.name, done, index)
        for job in jobs:
            if job.id in done:
                reporter.skipped(job, done[job.id])
        gc_startup.release()  # the start-up's objects out of the collector's scans (gc_startup.py)
        ran = (
            runner.run(todo, suite.name, store, dev or runner.device(device), tracker, reporter, stop_after)
            if todo
            else {}
        )
        summaries = {job.id: done.get(job.id) or ran[job.id] for job in jobs}
        summarise(tracker, suite, jobs, store)
    print_outcomes(suite, jobs, summaries, store, columns, table[1])  # figures are `fedbench report`'s
    if kept := stale_line([s.stale or [] for s in summaries.values()]):  # --keep-stale
        err_console.print(kept, markup=False)
    out.print(f"results: {store.suite(suite.name).path}" + mlflow_hint(tracker), markup=False, highlight=False)
    exit_for_statuses(jobs, summaries)


def mlflow_hint(tracker) -> str:
    """Where the runs are and how to see them (nothing without tracking)."""
    if not tracker.uri:
        return ""
    from benchmark.run.tracking import runs_page

    serve = "" if tracker.uri.startswith(("http://", "https://")) else f"mlflow ui --backend-store-uri {tracker.uri}, "
    return f"   MLflow: {tracker.uri} ({serve}then {runs_page(tracker.uri, tracker.experiment_id)})"


def exit_for_statuses(jobs, summaries: dict[str, dict]) -> None:
    """Failed jobs: exit 2. Diverged jobs are results (an lr sweep may diverge at its largest
    value): exit 0, unless every job of a method on a dataset diverged (exit 1)."""
    from benchmark.store.job_status import DIVERGED, FAILED, methods_all_diverged

    failed = [s for s in summaries.values() if s.status == FAILED]
    diverged = [s for s in summaries.values() if s.status == DIVERGED]
    if failed:
        raise UserError(f"{len(failed)} job(s) failed; see summary.json in their results folders")
    if diverged:
        err_console.print(
            f"{len(diverged)} job(s) diverged (status diverged@round: no accuracy is reported for them)", markup=False
        )
    hopeless = methods_all_diverged(
        [(f"{j.dataset_label} / {j.method_label.split('[')[0]}", summaries[j.id]) for j in jobs if j.id in summaries]
    )
    if hopeless:
        err_console.print("every job diverged for: " + ", ".join(hopeless), markup=False)
        raise click.exceptions.Exit(1)
