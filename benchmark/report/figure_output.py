"""How every report figure is written and laid out, shared by the figure modules (figures.py,
sensitivity_figure.py, client_figure.py, splits.py, a protocol's report section) without importing one another:
PNG for the HTML report and PDF (vector) for a paper, and legends in even rows.
"""

from __future__ import annotations

from pathlib import Path

DPI = 150
FORMATS = (".png", ".pdf")  # PNG for the HTML report, PDF (vector) for a paper


def save_figure(fig, path: Path) -> Path:
    """Write `path` (PNG) and the same figure as PDF beside it; returns the PNG's path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in FORMATS:  # a pyplot-free Figure picks the canvas for each format itself
        fig.savefig(path.with_suffix(suffix), dpi=DPI)
    return path


def legend_columns(entries: int, widest: int = 6) -> int:
    """Rows as even as possible, at most `widest` entries each: 5 entries in one row, not 4 + a stray one
    (matplotlib fills a legend column by column)."""
    rows = -(-entries // widest)
    return max(1, -(-entries // max(rows, 1)))
