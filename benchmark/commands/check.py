"""`fedbench check`: a suite's jobs run (at least 3 seeds each) and compared with its baseline
(the gate: report/check.py); exit 1 on a regression."""

from __future__ import annotations

import json
from pathlib import Path

import click

from benchmark.commands.output import out, progress
from benchmark.commands.tracking import closed_with_outcome, open_tracker
from benchmark.errors import UserError


def check_suite(
    select,
    suite_file: Path,
    narrowed: bool,
    *,
    baseline,
    results_dir,
    reuse: bool,
    tolerance,
    strict: bool,
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
    from benchmark.report import check_output
    from benchmark.run.threads import request

    request(threads)  # torch's CPU threads for every job; None: each job's model is probed (run/threads.py)
    if update and narrowed:
        raise UserError(
            "--update writes the suite's own baseline: every job, the suite's settings (no --only/--set/--rounds)"
        )
    suite, jobs = select()
    gate.check_seeds(jobs)
    path = baseline or Path("results") / "baselines" / f"{suite.name}.json"
    expected = None if update else gate.load_baseline(path)
    if expected is not None:
        in_suite = {gate.group_of_job(j) for j in select(only=())[1]}
        gate.check_matches(expected, {gate.group_of_job(j) for j in jobs}, in_suite, path)
    with gate.check_folder(results_dir, reuse, suite.name, jobs) as folder:
        summaries = _run_for_check(suite, suite_file, jobs, folder, no_tracking, quiet, verbose)
    if update:
        gate.write_baseline(path, [summaries[j.id] for j in jobs])
        out.print(f"baseline written: {path} ({len(jobs)} jobs)", markup=False)
        return
    rows = gate.compare(expected, [summaries[j.id] for j in jobs], tolerance)
    if junit_xml:
        check_output.write_junit(junit_xml, suite.name, rows, strict)
    if as_json:
        click.echo(json.dumps(check_output.as_json(suite.name, path, rows, strict), indent=2))
    else:
        out.print(check_output.table(suite.name, rows, strict))
        out.print(gate.summary_line(rows, strict) + f" (baseline {path})", markup=False, highlight=False)
    if any(r.failed(strict) for r in rows):
        raise click.exceptions.Exit(1)


def _run_for_check(suite, suite_file, jobs, folder: Path, no_tracking: bool, quiet: bool, verbose: bool) -> dict:
    from benchmark.run.executor import LocalExecutor
    from benchmark.run.tracking import NullTracker

    local = LocalExecutor()
    local.check(jobs)
    tracker = NullTracker() if no_tracking else open_tracker(suite.name, None, folder, suite_file)
    with closed_with_outcome(tracker):
        return local.run(jobs, suite.name, folder, local.device("auto"), tracker, progress(jobs, quiet, verbose), None)
