"""What every command prints through: the consoles, strict JSON, the progress reporter, the result
tables, and the note on jobs on disk that a selection leaves out."""

from __future__ import annotations

import os
import sys

import click
from rich.console import Console

from benchmark.errors import UserError
from benchmark.store.layout import Store


def _piped_width(stream) -> int | None:
    """A terminal's width is its own, or $COLUMNS (rich reads both); piped output (CI logs, files) is 200
    wide unless $COLUMNS says otherwise, instead of rich's 80-column default."""
    return None if stream.isatty() or os.environ.get("COLUMNS", "").isdigit() else 200


# emoji=False: a name such as a plugin's "a:smile:b" is printed as written, and rich's 3,600 emoji codes are
# never loaded (2 ms of every command that prints markup)
out = Console(width=_piped_width(sys.stdout), emoji=False)
err_console = Console(stderr=True, width=_piped_width(sys.stderr), emoji=False)


def print_json(obj) -> None:
    """Strict JSON on stdout (no NaN), for scripts: nothing else is printed there."""
    from benchmark.store.job_dir import strict_json

    click.echo(strict_json(obj, indent=2))


def progress(jobs, quiet: bool, verbose: bool):
    """The progress reporter for this invocation (and the log level of the "fedbench" logger)."""
    if quiet and verbose:
        raise UserError("--quiet and --verbose exclude each other")
    from benchmark.run.progress import NORMAL, QUIET, VERBOSE, configure_logging, reporter

    verbosity = QUIET if quiet else VERBOSE if verbose else NORMAL
    configure_logging(verbosity)
    return reporter(jobs, err_console, verbosity)


def table_columns(columns: str | None, wide: bool) -> tuple[str, ...]:
    """`--columns KEY,..` as its keys (none: the columns that fit); with `--wide` an error."""
    if columns and wide:
        raise UserError("--columns picks columns, --wide shows all of them: use one")
    return tuple(c.strip() for c in columns.split(",") if c.strip()) if columns else ()


def print_results(
    suite, jobs, summaries: dict, store: Store, columns=(), wide: bool = False, draw: bool = True
) -> None:
    """Each protocol's section (tables, note, and with `draw` its figure) for the jobs it claims, the paper
    tables for the rest, as wide as the console."""
    from benchmark.report.protocol_sections import print_sections
    from benchmark.report.table import result_tables

    rest = print_sections(out, suite, jobs, summaries, store, draw)
    for table in result_tables(suite, rest, summaries, store, columns, wide, out.width):
        if wide:
            _print_whole(table)
        else:
            out.print(table)


def _print_whole(table) -> None:
    """--wide: every column whole, wider than the console if need be (a terminal wraps the lines; a pipe
    or `less -S` keeps them)."""
    from rich.measure import Measurement

    console_width = out.width
    out.width = max(console_width, Measurement.get(out, out.options.update_width(10_000), table).maximum)
    try:
        out.print(table)
    finally:
        out.width = console_width


def print_outcomes(suite, jobs, summaries: dict, store: Store, columns=(), wide: bool = False) -> None:
    """What `run` prints at its end: the result tables, as `report` prints them, up to LISTED_UP_TO jobs;
    beyond, each protocol's section and a row per dataset and method with its jobs' statuses (the tables of
    10^4 grid jobs take minutes to compute, and a sensitivity table of 1,000 settings is not read on a
    terminal), and the command that prints them."""
    from benchmark.report.status import LISTED_UP_TO

    if len(jobs) <= LISTED_UP_TO:
        print_results(suite, jobs, summaries, store, columns, wide, draw=False)
        return
    from benchmark.report.protocol_sections import print_sections, split

    rest = print_sections(out, suite, jobs, whole_summaries(split(jobs)[0], summaries, store), store, False)
    if rest:
        out.print(status_counts(suite, rest, summaries))
        out.print(
            f"over {LISTED_UP_TO} jobs `run` counts them; the result tables: fedbench report SUITE_FILE (same options)",
            markup=False,
            highlight=False,
        )


def whole_summaries(claimed: list, summaries: dict, store: Store) -> dict:
    """`summaries` with each protocol-claimed job's `Outcome` (all a run keeps of a reused job over LISTED_UP_TO
    jobs) replaced by its summary read whole: a protocol's section reads their numbers and code."""
    from benchmark.store.job_dir import JobDir
    from benchmark.store.records import Outcome

    reused = [job.id for _, mine in claimed for job in mine if isinstance(summaries.get(job.id), Outcome)]
    return {**summaries, **{i: s for i in reused if (s := JobDir.for_reading(store, i).read_summary())}}


def status_counts(suite, jobs, summaries: dict):
    """A row per dataset and method: how many of its jobs ended how."""
    from rich.markup import escape
    from rich.table import Table

    counts: dict[tuple[str, str], dict[str, int]] = {}
    for job in jobs:
        status = summary.status if (summary := summaries.get(job.id)) else "not run"
        row = counts.setdefault((job.dataset_label, job.method_label.split("[")[0]), {})
        row[status] = row.get(status, 0) + 1
    statuses = sorted({status for row in counts.values() for status in row})
    table = Table(title=escape(f"{suite.name}: {len(jobs)} jobs, a row per dataset and method"))
    for column in ("dataset", "method", "jobs", *statuses):
        table.add_column(column, justify="left" if column in ("dataset", "method") else "right")
    for (dataset, method), row in counts.items():
        cells = [str(sum(row.values())), *(str(row.get(status, 0)) for status in statuses)]
        table.add_row(escape(dataset), escape(method), *cells)
    return table


def note_unselected(suite, jobs: list, store: Store) -> None:
    """Jobs on disk this selection leaves out (run with --set/--rounds, or by an earlier suite
    version) would silently be missing: say how many, and the options that show them."""
    from benchmark.report.on_disk import options_text, override_groups

    view = store.suite(suite.name)
    groups = override_groups(view, jobs)
    if not groups:
        return
    how = [
        f"{len(ids)} with `{options_text(sets)}`" if sets else f"{len(ids)} from other suite settings"
        for sets, ids in groups.items()
    ]
    err_console.print(
        f"note: {sum(map(len, groups.values()))} other job(s) in {view.path} are not shown: "
        + "; ".join(how)
        + " (pass those options to show them)",
        markup=False,
    )
