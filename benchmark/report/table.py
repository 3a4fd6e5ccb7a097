"""The report's tables for the terminal: per dataset entry a row per method (grid collapsed to
its best setting), mean ± std over seeds with the paper's number and Δ, and the sensitivity
table over the grid; the same tables as the report files (entry_tables.py).

A terminal table fits the console, at most TERMINAL_WIDTH columns: the label columns always show,
then metric columns in the order of `_priority` while they fit; the caption names the columns left
out. `columns` picks them by key or header instead, `wide` shows every one. Settings every row ran
(the --set / --rounds overrides) move from the setting column to one caption line, and a label column
too wide to leave room for the first metric column wraps, so no override pushes the numbers out."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from benchmark.errors import UserError
from benchmark.store.job_status import FINISHED
from benchmark.suite.expand import Job
from benchmark.suite.schema import Suite

if TYPE_CHECKING:
    import pandas as pd

    from benchmark.store.layout import Store

TERMINAL_WIDTH = 100
BORDER = 3  # a column's separator and padding in rich's default box
MIN_LABEL = 12  # a wrapped label column keeps this many characters a line
SETTING_GAP = re.compile(r" (?=[A-Za-z_][\w.]*=)")  # between two `key=value` settings of a setting label


def _priority(t, header: str) -> float:
    """Lower shows first: the status where a job did not finish (it flags what the numbers miss), the
    suite's smoothed accuracies, the final accuracy (and the validation accuracy a grid was selected on),
    the paired difference to the baseline, rounds to
    a target, the status of an all-finished table, then raw accuracies, bytes and wall time; a column no
    row has a number in (a metric past the jobs' last round, only the paper's number) after the raw ones."""
    if header == "status":
        return -1 if any(r.status != FINISHED for r in t.rows) else 4
    col = next(c for c in t.columns if c.header == header)
    if all(r.cells[col.key].value is None and r.cells[col.key].mean is None for r in t.rows):
        return 5.5
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
    labels = [h for h in t.labels(t.rows[0]) if h != "status" and h in text.columns]
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
    _refuse_unknown(columns, {c.key: c.header for t in tables for c in t.columns})


def check_columns_before_run(jobs: list[Job], columns: tuple[str, ...]) -> None:
    """`run --columns`: names no table of these jobs could have are an error before any job runs (a
    `bytes_to@X` target is decided by the results: any X passes)."""
    if not columns:
        return
    from benchmark.report.entry_tables import column_keys

    keys = {k: h for config in {id(j.config): j.config for j in jobs}.values() for k, h in column_keys(config).items()}
    _refuse_unknown(tuple(c for c in columns if not c.lower().startswith("bytes_to@")), keys)


def _refuse_unknown(columns: tuple[str, ...], headers: dict[str, str]) -> None:
    known = {"status"} | {name.lower() for key, header in headers.items() for name in (key, header)}
    unknown = [c for c in columns if c.lower() not in known]
    if unknown:
        keys = sorted({"status", *headers})
        raise UserError(f"--columns {', '.join(unknown)}: no such column; the tables have: {', '.join(keys)}")


def shared_settings(text: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """(`text` without the settings every row's setting label holds, those settings): what --set and
    --rounds changed for every job is said once, and the setting column keeps what tells rows apart
    (dropped when nothing does)."""
    if "setting" not in text:
        return text, ""
    items = [SETTING_GAP.split(label) for label in text["setting"]]
    shared = [x for x in items[0] if x and all(x in row for row in items[1:])]
    if not shared:
        return text, ""
    rest = [" ".join(x for x in row if x not in shared) for row in items]
    text = text.assign(setting=rest) if any(rest) else text.drop(columns="setting")
    return text, " ".join(shared)


def _label_widths(t, text, labels: list[str], budget: int) -> dict[str, int]:
    """Each label column's width: its longest cell, the widest giving way (to wrap) until the first metric
    column by `_priority` fits beside them, none below MIN_LABEL characters."""
    widths = {h: _width(text[h]) for h in labels}
    metrics = sorted((h for h in text.columns if h not in labels), key=lambda h: _priority(t, h))
    room = budget - (_width(text[metrics[0]]) if metrics else 0)
    while sum(widths.values()) > room:
        widest = max(widths, key=widths.get)
        if widths[widest] <= MIN_LABEL + BORDER:
            break
        widths[widest] -= 1
    return widths


def rich_table(t, columns: tuple[str, ...] = (), wide: bool = False, width: int = TERMINAL_WIDTH) -> Table:
    """An EntryTable for a terminal `width` characters wide (at most TERMINAL_WIDTH), best of each column in
    bold, its notes and the columns left out as the caption."""
    text, best = t.display()
    text, shared = shared_settings(text)
    best = best[text.columns]
    budget = min(width, TERMINAL_WIDTH) - 1
    labels = [h for h in t.labels(t.rows[0]) if h in text.columns]
    fitted = {} if wide else _label_widths(t, text, [h for h in labels if h != "status"], budget)
    widths = {h: fitted.get(h) or _width(text[h]) for h in text.columns}
    shown, hidden = choose_columns(t, text, columns, wide, widths.__getitem__, budget)
    notes = list(t.notes) + ([f"every row ran {shared}"] if shared else [])
    if hidden:
        notes.append(f"not shown: {', '.join(hidden)} (--wide shows every column, --columns KEY,... picks them)")
    table = Table(title=escape(t.title), caption=escape("\n".join(notes)) or None, caption_justify="left")
    for header in shown:  # fixed widths: a metric cell never wraps, a header or a narrowed label between words
        justify = "left" if header in labels else "right"
        table.add_column(escape(header), justify=justify, width=widths[header] - BORDER, overflow="fold")
    for (_, cells), (_, marks) in zip(text[shown].iterrows(), best[shown].iterrows()):
        table.add_row(*(f"[bold]{escape(v)}[/bold]" if marks[k] else escape(v) for k, v in cells.items()))
    return table


def result_tables(
    suite: Suite,
    jobs: list[Job],
    summaries: dict[str, dict],
    store: Store | None = None,
    columns: tuple[str, ...] = (),
    wide: bool = False,
    width: int = TERMINAL_WIDTH,
) -> list[Table]:
    """Rich tables (each entry's, then its sensitivity table) for a terminal `width` wide from the jobs'
    summaries; with `store`, bytes to a target the suite does not name come from the round records."""
    if not jobs:  # every job is in a protocol's section (a FedAc suite): no frames to build, no pandas imported
        check_columns([], columns)
        return []
    from benchmark.report.entry_tables import entry_tables
    from benchmark.report.frames import jobs_frame, rounds_frame

    rounds = rounds_frame(jobs, store) if store else None
    tables = entry_tables(suite, jobs, jobs_frame(jobs, summaries=summaries), rounds)
    every = [x for t in tables for x in (t, t.sensitivity) if x is not None]
    check_columns(every, columns)
    return [rich_table(x, columns, wide, width) for x in every]
