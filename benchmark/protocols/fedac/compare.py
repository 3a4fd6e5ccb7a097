"""fedbench's FedAc cells against the authors' released runs (`reference.authors` of a suite):
per (method, M, K) the authors' best final F − F* over their η (one run) against the same
statistic of each fedbench seed (its best over η), as their mean and range, and the ratio
authors / fedbench mean. The minimum over η of one run lies below the minimum over η of the seed
means (what the figure plots), so the like-for-like comparison takes the minimum per seed.

A cell agrees when the authors' value lies within 1.5x of fedbench's seed mean or inside its
seed range (one w₀ per seed: the authors' single run is one such draw). How often one run
agrees is measured on fedbench's own seeds: each seed's best against the other seeds' by the
same rule (`self_agreement`; against one seed fewer than the authors' value, so a slightly
harder test). A cell none of whose seeds has a best (an η of each failed or was not run) is
counted, not compared. A method the suite marks
`not_compared` is shown but not scored (FedAc-II with the paper's β: the authors' code sets another;
their FedAc-II runs are scored against "FedAc-II (authors' β)").
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmark.protocols.fedac.power import pairs_of, power_summary

CLOSE, FAR = 1.5, 2.5  # the summary's two bands of the ratio


@dataclass(frozen=True)
class Comparison:
    method: str
    workers: int
    k: int
    mean: float  # fedbench: mean over seeds of each seed's best final F − F* over η
    low: float  # ... and their range
    high: float
    seeds: int  # how many seeds have a best (each η of theirs finished or diverged, one finished)
    at_edge: bool  # a seed's best η lies at the edge of fedbench's grid
    authors: float  # the authors' best final F − F* over their η
    authors_lr: float
    not_compared: str  # why this cell is shown but not compared ('' when it is)
    authors_lr_outside: bool  # the authors' best η lies outside the η grid fedbench ran

    @property
    def ratio(self) -> float:
        return self.authors / self.mean

    def within(self, factor: float) -> bool:
        return within(self.authors, self.mean, factor)

    @property
    def agrees(self) -> bool:
        return agrees(self.authors, self.mean, self.low, self.high)

    @property
    def text(self) -> str:
        mark = " ^" if self.authors_lr_outside else ""
        spread = f" [{self.low:.2e}, {self.high:.2e}]" if self.high > self.low else ""
        ratio = "not compared" if self.not_compared else f"x{self.ratio:.2f}"
        return f"{self.mean:.2e}{spread} vs {self.authors:.2e} ({self.authors_lr:g}{mark}): {ratio}"


def within(value: float, mean: float, factor: float) -> bool:
    """`value` within `factor` of `mean` (either way); never for a value ≤ 0 (F − F* of float32
    runs against a float64 F* could reach it)."""
    return value > 0 and mean > 0 and max(value / mean, mean / value) <= factor


def agrees(value: float, mean: float, low: float, high: float) -> bool:
    """`value` within 1.5x of `mean`, or inside [low, high]."""
    return within(value, mean, CLOSE) or low <= value <= high


def comparisons(cells: dict) -> list[Comparison]:
    """A Comparison for every cell with the authors' value and at least one seed's best."""
    out = []
    for (method, workers, k), cell in cells.items():
        seed_bests = cell.seed_bests()
        if cell.authors is None or not seed_bests:
            continue
        bests = [value for value, _, _ in seed_bests]
        mean = sum(bests) / len(bests)
        edge = any(cell.on_edge(lr) for _, lr, _ in seed_bests)
        authors, authors_lr = cell.authors
        outside = not min(cell.lrs) <= authors_lr <= max(cell.lrs)
        out.append(
            Comparison(
                method,
                workers,
                k,
                mean,
                min(bests),
                max(bests),
                len(bests),
                edge,
                authors,
                authors_lr,
                cell.not_compared,
                outside,
            )
        )
    return out


def self_agreement(cells: dict) -> tuple[int, int]:
    """(agreeing, tried): every seed's best of every compared cell with 3 or more seeds, taken as
    if it were the authors' one run, against the other seeds by the same rule."""
    agreeing = tried = 0
    for cell in cells.values():
        bests = [value for value, _, _ in cell.seed_bests()]
        if cell.authors is None or cell.not_compared or len(bests) < 3:
            continue
        for i, value in enumerate(bests):
            others = bests[:i] + bests[i + 1 :]
            agreeing += agrees(value, sum(others) / len(others), min(others), max(others))
            tried += 1
    return agreeing, tried


def comparison_summary(cells: dict) -> str:
    """'N of M cells within 1.5x / 2.5x', the agreement count, overall and per method, and the
    agreement fedbench's own seeds reach with each other (what one run can be expected to reach)."""
    shown = comparisons(cells)
    incomplete = sum(1 for c in cells.values() if c.authors and not c.not_compared and not c.seed_bests())
    lacking = (
        f"{incomplete} cells not compared: no seed has a best (an η of each failed or was not run)"
        if incomplete
        else ""
    )
    if not shown:
        return lacking
    compared = [c for c in shown if not c.not_compared]
    n = len(compared)
    skipped = sorted({f"{c.method}: {c.not_compared}" for c in shown if c.not_compared})

    def share(k: int, n: int = n) -> str:
        return f"{k} of {n} ({100 * k / n:.1f} %)" if n else "0 of 0"

    outside = [c for c in compared if c.authors_lr_outside]
    seeds = sorted({c.seeds for c in shown})
    seeds_text = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
    methods = dict.fromkeys(c.method for c in compared)
    per_method = ", ".join(
        f"{m} {share(sum(c.agrees for c in compared if c.method == m), sum(c.method == m for c in compared))}"
        for m in methods
    )
    own, tried = self_agreement(cells)
    return "\n".join(
        filter(
            None,
            [
                f"authors vs fedbench (best final F − F* over η of each run; fedbench: {seeds_text} seeds per cell): "
                f"{n} cells compared"
                + (f" (shown, not compared: {'; '.join(skipped)})" if skipped else "")
                + f"; ratio within {CLOSE}x: {share(sum(c.within(CLOSE) for c in compared))}, "
                f"within {FAR}x: {share(sum(c.within(FAR) for c in compared))}; "
                f"authors' value within {CLOSE}x of fedbench's seed mean or inside its seed range: "
                f"{share(sum(c.agrees for c in compared))}; "
                f"'^' = the authors' best η lies outside the grid fedbench ran: {len(outside)} cells, "
                f"{sum(c.at_edge for c in outside)} of them with a seed's best η at the edge of fedbench's grid",
                lacking,
                f"agreement per method: {per_method}" if len(methods) > 1 else "",
                f"fedbench's own seeds, each against the other seeds by the same rule (what one run reaches; "
                f"against one seed fewer than the authors' value): {share(own, tried)}"
                if tried
                else "",
                power_summary(*pairs_of(cells)),
            ],
        )
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
            ids = [job for m in mine for _, _, job in cells[method, m, k].seed_bests()]
            rows.append(Row(method, method, "", "", "", ids, [], row_cells))
        title = (
            f"K = {k}: the best final F(w) − F* over η of each run: fedbench's seed mean [range] vs the authors' "
            "(their η): ratio"
        )
        table = EntryTable(f"K={k} authors", f"fedac_K{k}_authors", title, columns, rows, kind="fedac")
        table.numbers = comparison_numbers(items)
        tables.append(table)
    return tables


def comparison_numbers(items: list[Comparison]) -> list[dict]:
    """The comparison table as numbers (its .csv and report.json): a row per method and M with K, fedbench's
    seed mean and range of each seed's best over η, the seeds, the authors' value and their η, the ratio
    authors / fedbench (empty where the cell is not compared), whether the cell agrees, and why not compared."""
    return [
        {
            "method": c.method,
            "K": c.k,
            "M": c.workers,
            "subopt_mean": c.mean,
            "subopt_low": c.low,
            "subopt_high": c.high,
            "seeds": c.seeds,
            "eta_at_grid_edge": c.at_edge,
            "authors_subopt": c.authors,
            "authors_eta": c.authors_lr,
            "authors_eta_outside_grid": c.authors_lr_outside,
            "ratio": None if c.not_compared else c.ratio,
            "agrees": None if c.not_compared else c.agrees,
            "not_compared": c.not_compared,
        }
        for c in items
    ]


def authors_points(cells: dict, method: str, k: int) -> list[tuple[int, float]]:
    """(M, authors' value) of a method's cells at K, for the figure's hollow markers."""
    return sorted((m, c.authors[0]) for (meth, m, kk), c in cells.items() if meth == method and kk == k and c.authors)
