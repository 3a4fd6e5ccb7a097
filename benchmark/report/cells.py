"""A table cell's text from the jobs behind it: mean ± std over the finished seeds, the paper's
number and Δ beside it, or what became of the jobs when none finished ("diverged (2/3)",
"— not run"); `value` keeps the mean as printed, for marking the best of a column."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a run's terminal tables import no pandas (0.2-0.5 CPU-s)
    import pandas as pd

NOT_RUN_TEXT = "— not run"


@dataclass
class Column:
    key: str  # a jobs_frame column (acc@60, final_ema_acc, bytes_to@70, wall_s, ...)
    header: str
    higher_is_better: bool
    unit: str = ""  # "rounds", "MB", "s", "acc", "subopt": how values are printed
    ranked: bool = True  # False: shown, never marked best (wall time measures the machine's load, not the method)


@dataclass
class Cell:
    text: str  # plain text: "81.75 ± 0.40 (paper 82.30, Δ −0.55)", "diverged (3/3)", ...
    value: float | None = None  # the mean the best is chosen on (rounded as printed)
    best: bool = False  # ahead of every other row of its column by the paired test (entry_tables.mark_best)
    tied: bool = False  # tied for best: no paired test separates it from the best
    job_ids: list[str] | None = None  # the jobs behind it, where not the whole row's
    # the numbers behind the text, unrounded (the tidy CSV and --json): over the finished seeds with a value
    mean: float | None = None
    std: float | None = None  # sample std; None for one value
    n: int = 0
    paper: float | str | None = None
    delta: float | None = None  # the printed mean minus the paper's number
    interval: tuple[float, float] | None = None  # a confidence interval of the mean, where one is computed
    unscored: str = ""  # the settings its jobs ran other than the paper's: shown beside the paper, no Δ


def number_text(x: float, unit: str) -> str:
    if unit == "rounds":
        return f"{x:.0f}"
    if unit == "MB":  # three significant digits, fixed-point
        mb = x / 1e6
        decimals = 0 if mb == 0 or abs(mb) >= 100 else 2 - math.floor(math.log10(abs(mb)))
        return f"{mb:.{decimals}f}"
    if unit == "subopt":
        return f"{x:.3e}"
    if unit == "s":
        return f"{x:.1f}"
    return f"{x:.2f}"


def mean_std(values: list[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (None for a single value)."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _mean_std(values: list[float], unit: str) -> tuple[str, float]:
    """'mean ± std' (std with the mean's decimals) and the mean as printed (what `best` compares)."""
    mean, std = mean_std(values)
    text = number_text(mean, unit)
    if std is not None:
        decimals = len(text.split(".")[1]) if "." in text and unit != "subopt" else 0
        text += f" ± {std / 1e6:.{decimals}f}" if unit == "MB" else f" ± {number_text(std, unit)}"
    shown = float(number_text(mean, unit)) * (1e6 if unit == "MB" else 1)
    return text, shown


def is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _lost_text(statuses: list[str]) -> str:
    """What became of jobs with no numbers: 'diverged (2/3), failed (1/3)', '— not run'."""
    import pandas as pd

    counts = pd.Series(statuses).value_counts()
    if list(counts.index) == ["not run"]:
        return NOT_RUN_TEXT
    return ", ".join(f"{s} ({n}/{len(statuses)})" for s, n in counts.items())


def stale_mark(*finished: pd.DataFrame) -> str:
    """' (stale k/n)' when k of the n finished jobs behind a number ran on code that changed since
    (kept by `run --keep-stale`, run/stale.py), else ''."""
    n = sum(len(f) for f in finished)
    k = sum(int((f["stale"].fillna("") != "").sum()) for f in finished if "stale" in f)
    return f" (stale {k}/{n})" if k else ""


def measured_cell(col: Column, finished: pd.DataFrame, everything: pd.DataFrame) -> Cell:
    """The column's cell over a setting's jobs (`everything`), from those that finished."""
    if finished.empty:
        return Cell(_lost_text(list(everything.status)))
    raw = list(finished[col.key]) if col.key in finished else []
    values = [float(v) for v in raw if is_number(v)]
    if not values:
        if col.unit in ("rounds", "MB"):
            return Cell(f">{int(everything['rounds'].iloc[0])}")
        return Cell("-")
    text, shown = _mean_std(values, col.unit)
    text += stale_mark(finished)
    mean, std = mean_std(values)
    if len(values) < len(finished):  # rounds/MB to a target some seeds never reached
        text += f" ({len(values)}/{len(finished)} reached)"
        return Cell(text, mean=mean, std=std, n=len(values))
    return Cell(text, shown, mean=mean, std=std, n=len(values))


def match_reference(labels: list[str], rows: dict) -> str | None:
    """The reference row of the first of `labels` (most specific first: the setting, the method
    with its grid point, the method) the reference has, exactly, else ignoring case."""
    lowered = {k.lower(): k for k in rows}
    return next((k for k in labels if k in rows), None) or next(
        (lowered[k.lower()] for k in labels if k.lower() in lowered), None
    )


NOT_SCORED = "‡"  # the jobs ran a setting other than the paper's / the suite's: paper shown, no Δ


def with_paper(cell: Cell, col: Column, ref, labels: list[str], off_paper: str = "") -> Cell:
    """'measured (paper P, Δ D)' where the reference has this row and metric; 'measured (paper P ‡)'
    without Δ when the jobs ran another setting (`off_paper` names it)."""
    if ref is None or col.key not in ref.metrics:
        return cell
    row = match_reference(labels, ref.rows)
    paper = ref.rows[row][ref.metrics.index(col.key)] if row else None
    if paper is None:
        return cell
    if off_paper:
        paper_text = number_text(paper, col.unit) if is_number(paper) else str(paper)
        cell.text, cell.paper, cell.unscored = f"{cell.text} (paper {paper_text} {NOT_SCORED})", paper, off_paper
        return cell
    dagger = " †" if ref.is_contradicted(row, col.key) else ""
    delta = ""
    if cell.value is not None and is_number(paper):
        d = cell.value - paper
        delta = f", Δ {'−' if d < 0 else '+'}{number_text(abs(d), col.unit)}"
    paper_text = number_text(paper, col.unit) if is_number(paper) else str(paper)
    cell.text = f"{cell.text} (paper {paper_text}{dagger}{delta})"
    cell.paper = paper
    cell.delta = cell.value - paper if cell.value is not None and is_number(paper) else None
    return cell
