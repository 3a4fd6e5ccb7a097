"""How every report figure is written and laid out, shared by the figure modules (figures.py,
sensitivity_figure.py, client_figure.py, splits.py, a protocol's report section) without importing one another:
PNG for the HTML report, PDF and SVG (vector) for a paper, legends in even rows, and the paper's sizes.

Fonts: a venue's PDF check rejects Type 3 fonts (matplotlib's default), so PDFs embed TrueType (Type 42),
text still selectable; SVG text is drawn as paths, so it looks the same where the font is not installed.
Sizes: a figure is drawn at the width it is printed (`--figure-width`: COLUMN_WIDTH for one column of a
two-column paper, PAGE_WIDTH for the text width) with 7-8 pt text, so a paper includes it unscaled.
"""

from __future__ import annotations

from pathlib import Path

DPI = 150
FORMATS = (".png", ".pdf", ".svg")  # PNG for the HTML report, PDF and SVG (vector) for a paper
SAVE_RC = {"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "path"}
COLUMN_WIDTH, PAGE_WIDTH = 3.25, 7.0  # inches: one column of a two-column paper; a page's text width
PAPER_RC = {
    "font.size": 8,
    "axes.labelsize": 8,
    "axes.titlesize": 8,
    "legend.fontsize": 7,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "lines.markersize": 4,
}
LEGEND_ROW = 0.22  # inches a legend row takes at PAPER_RC's sizes


def save_figure(fig, path: Path) -> Path:
    """Write `path` (PNG) and the same figure as PDF and SVG beside it; returns the PNG's path."""
    from matplotlib import rc_context

    path.parent.mkdir(parents=True, exist_ok=True)
    with rc_context(SAVE_RC):  # read when the file is written
        for suffix in FORMATS:  # a pyplot-free Figure picks the canvas for each format itself
            fig.savefig(path.with_suffix(suffix), dpi=DPI)
    return path


def paper_style():
    """The context to draw a figure in: its text at print sizes (read when the artists are made)."""
    from matplotlib import rc_context

    return rc_context(PAPER_RC)


def legend_columns(entries: int, widest: int = 6) -> int:
    """Rows as even as possible, at most `widest` entries each: 5 entries in one row, not 4 + a stray one
    (matplotlib fills a legend column by column)."""
    rows = -(-entries // widest)
    return max(1, -(-entries // max(rows, 1)))


def legend_widest(labels, width: float) -> int:
    """How many legend entries fit side by side in `width` inches, for the longest of `labels` at 7 pt."""
    longest = max((len(str(label)) for label in labels), default=10)
    return max(1, int(width // (0.058 * longest + 0.55)))


def legend_height(entries: int, widest: int) -> float:
    """Inches the legend below the panels takes, in `legend_columns` rows."""
    return LEGEND_ROW * -(-entries // legend_columns(entries, widest)) + 0.1


def panel_grid(panels: int, width: float, narrowest: float = 2.2) -> tuple[int, int]:
    """(rows, columns) of `panels` panels in a figure `width` inches wide: side by side while each is at
    least `narrowest` wide, else wrapped onto more rows."""
    columns = max(1, min(panels, int(width // narrowest)))
    return -(-panels // columns), columns
