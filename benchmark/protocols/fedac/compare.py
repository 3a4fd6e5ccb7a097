"""fedbench's FedAc cells against the authors' released runs (`reference.authors` of a suite):
per (method, M, K) fedbench's best η by seed mean, the seed range at that η, the authors' best
final F − F* over their η, and the ratio authors / fedbench.

A cell agrees when the authors' value lies within 1.5x of fedbench's seed mean or inside its
seed range (one w₀ per seed: the authors' single run is one such draw). A method the suite marks
`not_compared` is shown but not scored (FedAc-II with the paper's β: the authors' code sets another;
their FedAc-II runs are scored against "FedAc-II (authors' β)").
"""

from __future__ import annotations

from dataclasses import dataclass

CLOSE, FAR = 1.5, 2.5  # the summary's two bands of the ratio


@dataclass(frozen=True)
class Comparison:
    method: str
    workers: int
    k: int
    mean: float  # fedbench: mean over seeds of the final F − F* at its best η
    low: float  # ... and the seeds' range at that η
    high: float
    lr: float
    authors: float  # the authors' best final F − F* over their η
    authors_lr: float
    not_compared: str  # why this cell is shown but not compared ('' when it is)
    authors_lr_outside: bool  # the authors' best η lies outside the η grid fedbench ran

    @property
    def ratio(self) -> float:
        return self.authors / self.mean

    def within(self, factor: float) -> bool:
        return max(self.ratio, 1 / self.ratio) <= factor

    @property
    def agrees(self) -> bool:
        return self.within(CLOSE) or self.low <= self.authors <= self.high

    @property
    def text(self) -> str:
        mark = " ^" if self.authors_lr_outside else ""
        spread = f" [{self.low:.2e}, {self.high:.2e}]" if self.high > self.low else ""
        ratio = "not compared" if self.not_compared else f"x{self.ratio:.2f}"
        return f"{self.mean:.2e}{spread} vs {self.authors:.2e} ({self.authors_lr:g}{mark}): {ratio}"


def comparisons(cells: dict) -> list[Comparison]:
    """A Comparison for every cell with the authors' value and a fedbench best (seed-averaged)."""
    out = []
    for (method, workers, k), cell in cells.items():
        if cell.authors is None or cell.best is None:
            continue
        lr, mean = cell.best
        seeds = cell.finished[lr]
        authors, authors_lr = cell.authors
        outside = not min(cell.lrs) <= authors_lr <= max(cell.lrs)
        out.append(
            Comparison(
                method, workers, k, mean, min(seeds), max(seeds), lr, authors, authors_lr, cell.not_compared, outside
            )
        )
    return out


def comparison_summary(cells: dict) -> str:
    """'N of M cells within 1.5x / 2.5x' and the agreement count, over the compared cells."""
    shown = comparisons(cells)
    if not shown:
        return ""
    compared = [c for c in shown if not c.not_compared]
    n = len(compared)
    skipped = sorted({f"{c.method}: {c.not_compared}" for c in shown if c.not_compared})

    def share(k: int) -> str:
        return f"{k} of {n} ({100 * k / n:.1f} %)" if n else "0 of 0"

    outside = [c for c in compared if c.authors_lr_outside]
    edge = [
        c
        for c in outside
        if c.lr in (min(cells[c.method, c.workers, c.k].lrs), max(cells[c.method, c.workers, c.k].lrs))
    ]
    return (
        f"authors vs fedbench (best final F − F* over η): {n} cells compared"
        + (f" (shown, not compared: {'; '.join(skipped)})" if skipped else "")
        + f"; ratio within {CLOSE}x: {share(sum(c.within(CLOSE) for c in compared))}, "
        f"within {FAR}x: {share(sum(c.within(FAR) for c in compared))}; "
        f"authors' value within {CLOSE}x of fedbench's seed mean or inside its seed range: "
        f"{share(sum(c.agrees for c in compared))}; "
        f"'^' = the authors' best η lies outside the grid fedbench ran: {len(outside)} cells, "
        f"{len(edge)} of them with fedbench's best η at its grid's edge"
    )


def comparison_tables(cells: dict) -> list:
    """One report table per K: a row per method, a column per M, each cell
    'fedbench mean [seed range] vs authors (their η): ratio authors/fedbench'."""
    from benchmark.report.entry_tables import Cell, Column, EntryTable, Row

    by_k: dict[int, list[Comparison]] = {}
    for c in comparisons(cells):
        by_k.setdefault(c.k, []).append(c)
    tables = []
    for k, items in sorted(by_k.items()):
        workers = sorted({c.workers for c in items})
        columns = [Column(f"M={m}", f"M={m}", False, "subopt") for m in workers]
        rows = []
        for method in dict.fromkeys(c.method for c in items):
            mine = {c.workers: c for c in items if c.method == method}
            row_cells = {f"M={m}": Cell(mine[m].text if m in mine else "-") for m in workers}
            ids = [i for m in mine for i in cells[method, m, k].jobs[mine[m].lr]]
            rows.append(Row(method, method, "", "", "", ids, [], row_cells))
        title = f"K = {k}: fedbench seed mean [range] vs the authors' best final F(w) − F* (their η): ratio"
        tables.append(EntryTable(f"K={k} authors", f"fedac_K{k}_authors", title, columns, rows, kind="fedac"))
    return tables


def authors_points(cells: dict, method: str, k: int) -> list[tuple[int, float]]:
    """(M, authors' value) of a method's cells at K, for the figure's hollow markers."""
    return sorted((m, c.authors[0]) for (meth, m, kk), c in cells.items() if meth == method and kk == k and c.authors)
