"""The report's tables for the terminal: per dataset entry a row per method (grid collapsed to
its best setting), mean ± std over seeds with the paper's number and Δ, and the sensitivity
table over the grid; the same tables as the report files (entry_tables.py).

A terminal table fits TERMINAL_WIDTH columns: the label columns always show (the setting column,
which flags a setting other than the suite's, is never cut), then metric columns in the order of
`_priority` while they fit; the caption names the columns left out. `columns` picks them by key or
header instead, `wide` shows every one."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from rich.table import Table

from benchmark.errors import UserError
from benchmark.run.job_status import FINISHED
from benchmark.suite.expand import Job
from benchmark.suite.schema import Suite

TERMINAL_WIDTH = 100
BORDER = 3  # a column's separator and padding in rich's default box


def _priority(t, header: str) -> int:
    """Lower shows first: the status where a job did not finish (it flags what the numbers miss), the
    suite's smoothed accuracies, the final accuracy (and the validation accuracy a grid was selected on),
    the paired difference to the baseline, rounds to
    a target, the status of an all-finished table, then raw accuracies, bytes and wall time."""
    if header == "status":
        return -1 if any(r.status != FINISHED for r in t.rows) else 4
    col = next(c for c in t.columns if c.header == header)
    if col.key.endswith("-vs-baseline"):
        return 2
    if col.key in ("final_ema_acc", "final_subopt", "final_val_ema_acc"):
        return 1
    if col.unit == "rounds":
        return 3
    if col.unit == "s":
        return 7
    if col.unit == "MB":
        return 6
    if "raw" in col.header:
        return 5
    return 0


def _width(text) -> int:
    column = list(text)
    header_word = max((len(w) for w in str(text.name).split()), default=0)
    return max([header_word, *(len(str(v)) for v in column)]) + BORDER


def choose_columns(t, text, columns: tuple[str, ...], wide: bool, width, budget: float) -> tuple[list[str], list[str]]:
    """(headers shown, headers left out) of a table's display frame `text`: the label columns, then
    metric columns by `_priority` while their `width(header)` fits what the labels leave of `budget`
    (the terminal's characters, the LaTeX page's points); `columns` picks them instead, `wide` takes all."""
    labels = [h for h in t.labels(t.rows[0]) if h != "status"]
    metrics = [h for h in text.columns if h not in labels]
    if wide:
        return list(text.columns), []
    if columns:
        keys = {c.header: c.key for c in t.columns} | {"status": "status"}
        wanted = {c.lower() for c in columns}
        picked = [h for h in metrics if h.lower() in wanted or keys[h].lower() in wanted]
        return labels + picked, [h for h in metrics if h not in picked]
    budget -= sum(width(h) for h in labels)
    shown = set()
    for header in sorted(metrics, key=lambda h: _priority(t, h)):  # stable: suite order within a priority
        if width(header) <= budget:
            shown.add(header)
            budget -= width(header)
    return labels + [h for h in metrics if h in shown], [h for h in metrics if h not in shown]


def check_columns(tables, columns: tuple[str, ...]) -> None:
    """--columns names that no table has are an error naming the ones there are."""
    known = {"status"} | {name.lower() for t in tables for c in t.columns for name in (c.key, c.header)}
    unknown = [c for c in columns if c.lower() not in known]
    if unknown:
        keys = sorted({"status"} | {c.key for t in tables for c in t.columns})
        raise UserError(f"--columns {', '.join(unknown)}: no such column; the tables have: {', '.join(keys)}")


def rich_table(t, columns: tuple[str, ...] = (), wide: bool = False) -> Table:
    """An EntryTable for the terminal, best of each column in bold, its notes and the columns left
    out as the caption."""
    text, best = t.display()
    shown, hidden = choose_columns(t, text, columns, wide, lambda h: _width(text[h]), TERMINAL_WIDTH - 1)
    notes = list(t.notes)
    if hidden:
        notes.append(f"not shown: {', '.join(hidden)} (--wide shows every column, --columns KEY,... picks them)")
    table = Table(title=escape(t.title), caption=escape("\n".join(notes)) or None, caption_justify="left")
    labels = t.labels(t.rows[0])
    for header in shown:  # fixed widths: a cell never wraps, a header wraps between words
        width = _width(text[header]) - BORDER
        table.add_column(escape(header), justify="left" if header in labels else "right", width=width)
    for (_, cells), (_, marks) in zip(text[shown].iterrows(), best[shown].iterrows()):
        table.add_row(*(f"[bold]{escape(v)}[/bold]" if marks[k] else escape(v) for k, v in cells.items()))
    return table


def result_tables(
    suite: Suite,
    jobs: list[Job],
    summaries: dict[str, dict],
    results_root: Path | None = None,
    columns: tuple[str, ...] = (),
    wide: bool = False,
) -> list[Table]:
    """Rich tables (each entry's, then its sensitivity table) from the jobs' summaries; with
    `results_root`, bytes to a target the suite does not name come from the round records."""
    from benchmark.report.entry_tables import entry_tables
    from benchmark.report.frames import jobs_frame, rounds_frame

    rounds = rounds_frame(jobs, results_root) if results_root else None
    tables = entry_tables(suite, jobs, jobs_frame(jobs, summaries=summaries), rounds)
    every = [x for t in tables for x in (t, t.sensitivity) if x is not None]
    check_columns(every, columns)
    return [rich_table(x, columns, wide) for x in every]
