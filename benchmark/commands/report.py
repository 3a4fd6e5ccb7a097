"""`fedbench report`: measured vs paper numbers from the results on disk (never reruns), written to
results/<suite>/report/ and attached to the suite's MLflow run."""

from __future__ import annotations

from pathlib import Path

import click

from benchmark.commands.output import err_console, note_unselected, out, print_results, table_columns
from benchmark.commands.tracking import attach_report
from benchmark.errors import UserError


def report_suite(
    select,
    suite_file: Path,
    seeds,
    results_dir: Path,
    tracking_uri,
    no_tracking: bool,
    columns,
    wide: bool,
    as_json,
    figure_width: float = 7.0,
) -> None:
    from benchmark.report.figures import protocol_figures
    from benchmark.report.on_disk import jobs_with_seeds_on_disk, left_out_of_previous_report
    from benchmark.report.report_files import write_report
    from benchmark.run.stale import stale_line, stale_parts
    from benchmark.store.job_dir import JobDir
    from benchmark.store.job_store import look_at_results
    from benchmark.store.layout import Store

    store = Store(results_dir)  # the results folder, built once: whatever it hands on asks it for its paths
    look_at_results(store)  # report writes its report/ only: nothing else under results_dir moves
    suite, jobs = jobs_with_seeds_on_disk(select, store, seeds)
    summaries = {j.id: s for j in jobs if (s := JobDir.for_reading(store, j.id).read_summary())}
    if not summaries:
        raise UserError(
            f"no results for suite {suite.name!r} under {results_dir}; run `fedbench run {suite_file}` first"
        )
    picked = table_columns(columns, wide)
    if not as_json:
        print_results(suite, jobs, summaries, store, picked, wide)
    else:
        from benchmark.report.protocol_sections import draw_sections

        draw_sections(suite, jobs, summaries, store)
    note_unselected(suite, jobs, store)
    if said := stale_line([stale_parts(j, summaries.get(j.id)) for j in jobs]):
        err_console.print(said, markup=False)
    view = store.suite(suite.name)
    sections_figures = protocol_figures(view)
    report_dir = view.report
    if dropped := left_out_of_previous_report(report_dir / "report.json", {j.id for j in jobs}, view):
        err_console.print(
            f"warning: the report in {report_dir} covered {dropped} more job(s) whose results are still on disk; "
            "this narrower selection (--seeds/--only) replaces it: rerun without them to restore the fuller one",
            markup=False,
        )
    try:
        _, drawn = write_report(suite, jobs, summaries, store, sections_figures, picked, wide, figure_width)
    except OSError as err:  # a read-only or full results folder: say where, no traceback
        raise UserError(
            f"cannot write the report under {report_dir}: {err.strerror or err} ({err.filename or ''})"
        ) from None
    say = err_console if as_json else out  # with --json stdout carries the JSON only
    for figure in drawn:
        say.print(f"figure: {figure.path}", markup=False)
    say.print(f"report: {report_dir / 'report.html'} and report.md, tables in {view.tables}", markup=False)
    if as_json:
        click.echo((report_dir / "report.json").read_text())
    if not no_tracking:
        figures = [*sections_figures, *drawn]  # they lie inside the report's folder
        attach_report(
            suite.name,
            [report_dir] + [f.path for f in figures if f.path.exists() and report_dir not in f.path.parents],
            tracking_uri,
        )
