"""The report's tables for the terminal: per dataset entry a row per method (grid collapsed to
its best setting), mean ± std over seeds with the paper's number and Δ, and the sensitivity
table over the grid; the same tables as the report files (entry_tables.py)."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from rich.table import Table

from benchmark.suite.expand import Job
from benchmark.suite.schema import Suite


def rich_table(t) -> Table:
    """An EntryTable for the terminal, best of each column in bold, its notes as the caption."""
    text, best = t.display()
    table = Table(title=escape(t.title), caption=escape("\n".join(t.notes)) or None, caption_justify="left")
    labels = len(t.labels(t.rows[0]))
    for i, header in enumerate(text.columns):
        table.add_column(escape(header), justify="left" if i < labels else "right")
    for (_, cells), (_, marks) in zip(text.iterrows(), best.iterrows()):
        table.add_row(*(f"[bold]{escape(v)}[/bold]" if marks[k] else escape(v) for k, v in cells.items()))
    return table


def result_tables(
    suite: Suite, jobs: list[Job], summaries: dict[str, dict], results_root: Path | None = None
) -> list[Table]:
    """Rich tables (each entry's, then its sensitivity table) from the jobs' summaries; with
    `results_root`, bytes to a target the suite does not name come from the round records."""
    from benchmark.report.entry_tables import entry_tables
    from benchmark.report.frames import jobs_frame, rounds_frame

    rounds = rounds_frame(suite, jobs, results_root) if results_root else None
    tables = entry_tables(suite, jobs, jobs_frame(suite, jobs, summaries=summaries), rounds)
    return [rich_table(x) for t in tables for x in (t, t.sensitivity) if x is not None]
