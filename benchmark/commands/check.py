"""`fedbench check`: a suite's jobs run (at least 3 seeds each) and compared with its baseline
(the gate: report/check.py); exit 1 on a significant change, 2 when it cannot compare. The JUnit
file and JSON asked for are written whatever the outcome, and each check is its own MLflow run."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from benchmark.commands.output import err_console, out, progress
from benchmark.errors import UserError
from benchmark.store.layout import Store


def check_suite(
    select,
    suite_file: Path,
    narrowed: bool,
    *,
    baseline,
    results_dir,
    reuse: bool,
    tolerance,
    allow_improvements: bool,
    update: bool,
    junit_xml,
    as_json: bool,
    no_tracking: bool,
    threads,
    quiet: bool,
    verbose: bool,
) -> None:
    """`narrowed`: --only, --set or --rounds was given; the rest are the command's options."""
    from benchmark.report import check as gate
    from benchmark.report.check_output import Outcome

    if update and (junit_xml or as_json):
        raise UserError("--update writes a baseline and compares nothing: drop --junit-xml and --json")
    started = time.monotonic()
    outcome = Outcome(suite=suite_file.stem, allow_improvements=allow_improvements)
    loaded = False  # a suite that did not load gets no MLflow experiment
    try:
        gate.check_floor(tolerance)
        if update and narrowed:
            raise UserError(
                "--update writes the suite's own baseline: every job, the suite's settings (no --only/--set/--rounds)"
            )
        suite, jobs = select()
        outcome.suite, loaded = suite.name, True
        outcome.baseline = baseline or Path("results") / "baselines" / f"{suite.name}.json"
        gate.check_seeds(jobs)
        expected = None if update else gate.load_baseline(outcome.baseline)
        if expected is not None:
            in_suite = {gate.group_of_job(j) for j in select(only=())[1]}
            gate.check_matches(expected, {gate.group_of_job(j) for j in jobs}, in_suite, outcome.baseline)
        store = Store(results_dir) if results_dir else None  # built once, here; None: the gate's own scratch folder
        with gate.check_folder(store, reuse, suite.name, jobs) as folder:
            summaries = _run_for_check(suite, jobs, folder, threads, quiet, verbose)
        if update:
            gate.write_baseline(outcome.baseline, [summaries[j.id] for j in jobs])
            out.print(f"baseline written: {outcome.baseline} ({len(jobs)} jobs)", markup=False)
            return
        outcome.rows = gate.compare(expected, [summaries[j.id] for j in jobs], tolerance)
    except UserError as err:
        outcome.error = str(err)
        raise
    finally:
        if not update and (outcome.rows or outcome.error):
            outcome.seconds = time.monotonic() - started
            _publish(outcome, junit_xml, as_json, tracked=loaded and not no_tracking)
    if outcome.exit_code:
        raise click.exceptions.Exit(outcome.exit_code)


def _publish(outcome, junit_xml: Path | None, as_json: bool, tracked: bool) -> None:
    """The outcome as asked: JUnit file, JSON or the table, and the check's MLflow run."""
    from benchmark.report import check_output

    report = check_output.as_json(outcome)
    if junit_xml:
        check_output.write_junit(junit_xml, outcome)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    elif not outcome.error:
        out.print(check_output.table(outcome.suite, outcome.rows, outcome.allow_improvements))
        out.print(report["summary"] + f" (baseline {outcome.baseline})", markup=False, highlight=False)
    if tracked:
        _track(report, [junit_xml] if junit_xml else [])


def _track(report: dict, files: list[Path]) -> None:
    """A store that cannot be used is a warning: the verdict and its files stand without it."""
    from benchmark.run.check_tracking import log_check

    try:
        log_check(report, files)
    except Exception as err:
        first = (str(err).splitlines() or [""])[0][:160]
        err_console.print(
            f"warning: this check was not logged to MLflow ({type(err).__name__}: {first}); its outputs stand",
            markup=False,
        )


def _run_for_check(suite, jobs, store: Store, threads, quiet: bool, verbose: bool) -> dict:
    """The jobs' summaries; their runs are not mirrored to MLflow (the check's run is: _track)."""
    from benchmark.run.executor import LocalExecutor
    from benchmark.run.threads import request
    from benchmark.run.tracking import NullTracker

    request(threads)  # torch's CPU threads for every job; None: each job's model is probed (run/threads.py)
    local = LocalExecutor()
    local.check(jobs)
    return local.run(jobs, suite.name, store, local.device("auto"), NullTracker(), progress(jobs, quiet, verbose), None)
