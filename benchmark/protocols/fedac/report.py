"""FedAc's report section from results: per (method, M, K) the best learning rate by final F(w) − F*,
as tables (one per K) and as the paper's plot (one panel per K, F − F* against M, log-log, a
line per method).

A job counts when it finished with a finite final suboptimality; a job that diverged (status
`diverged`, or a non-finite F − F*) or failed is excluded from the choice and counted in the
table, so a point chosen among few surviving η values says so. A best η at the edge of the
grid is marked: the paper states its best η lie inside the range.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from benchmark.protocols.fedac.compare import authors_points, comparison_summary, comparison_tables
from benchmark.protocols.fedac.jobs import batch_key
from benchmark.protocols.fedac.suite_parts import AuthorsRuns
from benchmark.report.protocol_sections import Section
from benchmark.store.records import measured, summary_from_json
from benchmark.suite.expand import Job


def is_fedac_protocol(job: Job) -> bool:
    """Jobs of the FedAc protocol with F − F* recorded (the batched engine's jobs)."""
    return bool(job.config.suboptimality) and batch_key(job.config) is not None


@dataclass
class Cell:
    """One (method, M, K) point: its grid of η values and what became of each seed's run."""

    lrs: list[float] = field(default_factory=list)  # the grid, each η once
    # seed -> η -> (final F − F*, None when lost; its fate: finished / diverged / failed / not run; its job id)
    runs: dict[int, dict[float, tuple[float | None, str, str]]] = field(default_factory=dict)
    authors: tuple[float, float] | None = None  # the authors' best final F − F* over their η, and that η
    not_compared: str = ""  # why the authors' value is shown but not compared

    def _by_lr(self, pick) -> dict[float, list]:
        out: dict[float, list] = {}
        for by_lr in self.runs.values():
            for lr, run in by_lr.items():
                item = pick(*run)
                if item is not None:
                    out.setdefault(lr, []).append(item)
        return out

    @property
    def finished(self) -> dict[float, list[float]]:
        """η -> final F − F* of each finished seed."""
        return self._by_lr(lambda value, fate, job: value)

    @property
    def lost(self) -> dict[float, list[str]]:
        """η -> diverged / failed / not run, per lost seed."""
        return self._by_lr(lambda value, fate, job: fate if value is None else None)

    @property
    def jobs(self) -> dict[float, list[str]]:
        """η -> job ids, one per seed."""
        return self._by_lr(lambda value, fate, job: job)

    def seed_bests(self) -> list[tuple[float, float, str]]:
        """(best final F − F* over η, that η, its job) of each seed: the statistic the authors' single
        run per cell gives. A seed with an η not run, failed or unfinished is left out (its best is
        unknown); a diverged η is simply not its best."""
        return list(self.bests_by_seed().values())

    def bests_by_seed(self) -> dict[int, tuple[float, float, str]]:
        """seed_bests keyed by seed."""
        out = {}
        for seed, by_lr in self.runs.items():
            if len(by_lr) < len(self.lrs) or any(fate not in ("finished", "diverged") for _, fate, _ in by_lr.values()):
                continue
            finite = [(value, lr, job) for lr, (value, _, job) in by_lr.items() if value is not None]
            if finite:
                out[seed] = min(finite)
        return out

    @property
    def subopt(self) -> dict[float, float]:
        """η -> mean final F − F* over its seeds; an η with a lost seed is out of the choice."""
        return {lr: sum(v) / len(v) for lr, v in self.finished.items() if lr not in self.lost}

    @property
    def lost_runs(self) -> int:
        return sum(len(fates) for fates in self.lost.values())

    @property
    def best(self) -> tuple[float, float] | None:
        subopt = self.subopt
        if not subopt:
            return None
        lr = min(subopt, key=subopt.get)
        return lr, subopt[lr]

    @property
    def at_edge(self) -> bool:
        best = self.best
        return best is not None and self.on_edge(best[0])

    def on_edge(self, lr: float) -> bool:
        """Whether `lr` is the grid's smallest or largest η (a one-η grid has no edge)."""
        return len(self.lrs) > 1 and lr in (min(self.lrs), max(self.lrs))


def _fate(summary: Mapping | None) -> tuple[float | None, str]:
    if summary is None:
        return None, "not run"
    summary = summary_from_json(summary)  # typed as read, or as `run` hands it back
    status = summary.status or "?"
    value = measured(summary).final_subopt
    if status == "finished" and isinstance(value, (int, float)) and math.isfinite(value):
        return float(value), status
    return None, "diverged" if status in ("finished", "diverged") else status


def authors_runs(suite) -> dict[int, AuthorsRuns]:
    """Dataset entry -> the authors' released runs its reference carries."""
    return {
        i: d.reference.parts["authors"]
        for i, d in enumerate(suite.datasets)
        if d.reference and "authors" in d.reference.parts
    }


def collect(
    jobs: list[Job],
    summaries: dict[str, dict],
    unscored: dict[tuple[int, str], str] | None = None,
    authors_by_entry: dict[int, AuthorsRuns] | None = None,
) -> dict[tuple[str, int, int], Cell]:
    """(method, M, K) -> Cell, over the FedAc-protocol jobs; an η's seeds are averaged. `unscored`
    (audit.off_paper): (entry, method) -> the settings run other than the suite's; such a cell's
    authors' value is shown, not compared. `authors_by_entry`: `authors_runs` of the jobs' suite."""
    cells: dict[tuple[str, int, int], Cell] = defaultdict(Cell)
    for job in jobs:
        if not is_fedac_protocol(job):
            continue
        c = job.config
        cell = cells[job.method_label, c.num_clients, c.local.steps]
        authors = (authors_by_entry or {}).get(job.dataset_index)
        if authors and cell.authors is None:
            cell.authors = authors.best.get(job.method_label, {}).get(c.num_clients)
            off = (unscored or {}).get((job.dataset_index, job.method_label), "")
            cell.not_compared = authors.not_compared.get(job.method_label, "") or (off and f"ran {off}")
        lr = c.local.lr
        if lr not in cell.lrs:
            cell.lrs.append(lr)
        cell.runs.setdefault(c.seed, {})[lr] = (*_fate(summaries.get(job.id)), job.id)
    return dict(cells)


def _intervals(cells) -> list[int]:
    return sorted({k for _, _, k in cells})


def fedac_entry_tables(cells: dict[tuple[str, int, int], Cell]) -> list:
    """One report table per K: a row per method, a column per M, each cell 'F − F* (η)' traced
    to the job of that η (to every job of the cell when none has a number); the lowest per M bold where
    the paired test over seeds separates it."""
    from benchmark.report.entry_tables import Cell as TableCell
    from benchmark.report.entry_tables import Column, EntryTable, Row, mark_best

    tables = []
    methods = list(dict.fromkeys(m for m, _, _ in cells))
    for k in _intervals(cells):
        workers = sorted({m for (_, m, kk) in cells if kk == k})
        columns = [Column(f"M={m}", f"M={m}", False, "subopt") for m in workers]
        rows = []
        for method in methods:
            row_cells = {}
            for m in workers:
                cell = cells.get((method, m, k))
                best = cell.best if cell else None
                ids = cell.jobs[best[0]] if best else [i for ids in cell.jobs.values() for i in ids] if cell else []
                row_cells[f"M={m}"] = TableCell(_cell_text(cell), best[1] if best else None, job_ids=ids)
            row_ids = [i for c in row_cells.values() for i in c.job_ids]
            rows.append(Row(method, method, "", "", "", row_ids, [], row_cells))
        mark_best(columns, rows, _seed_values(cells, k))
        table = EntryTable(
            f"K={k}", f"fedac_K{k}", f"K = {k}: best final F(w) − F* over η (that η)", columns, rows, kind="fedac"
        )
        table.numbers = _numbers(cells, methods, workers, k)
        tables.append(table)
    return tables + comparison_tables(cells)


def _seed_values(cells: dict[tuple[str, int, int], Cell], k: int):
    """A row's per-seed values in a column `M=<m>`: each finished run of the row at its cell's best η, its
    F − F*. What mark_best's paired test compares, so a table bolds a method only where its seeds beat every
    other method's at the same seeds."""
    from benchmark.report.cells import is_number
    from benchmark.store.job_status import FINISHED

    runs: dict[str, tuple[int, str, float]] = {}  # job id -> (seed, column, F − F*)
    for (_, m, kk), cell in cells.items():
        if kk != k or not (best := cell.best):
            continue
        for seed, by_lr in cell.runs.items():
            value, fate, job_id = by_lr.get(best[0], (None, "", ""))
            if is_number(value) and fate == FINISHED:
                runs[job_id] = (seed, f"M={m}", value)
    return lambda row, key: {int(run[0]): float(run[2]) for run in map(runs.get, row.job_ids) if run and run[1] == key}


def _numbers(cells: dict[tuple[str, int, int], Cell], methods: list[str], workers: list[int], k: int):
    """The table's cells as numbers (its .csv): a record per method and M, the best η (eta), its mean final
    F(w) − F* over seeds (subopt), the seeds at that η, the runs lost to the choice and whether η is at
    the grid's edge; no best: eta and subopt empty."""
    records = []
    for method in methods:
        for m in workers:
            cell = cells.get((method, m, k))
            if cell is None:
                continue
            best = cell.best
            eta, subopt = best if best else (None, None)
            records.append(
                {
                    "method": method,
                    "K": k,
                    "M": m,
                    "eta": eta,
                    "subopt": subopt,
                    "seeds": len(cell.finished.get(eta, [])) if best else 0,
                    "lost_runs": cell.lost_runs,
                    "eta_at_grid_edge": cell.at_edge,
                    "jobs": " ".join(cell.jobs[eta] if best else [i for ids in cell.jobs.values() for i in ids]),
                }
            )
    return records


def _cell_text(cell: Cell | None) -> str:
    if cell is None:
        return "-"
    lost = f" x{cell.lost_runs}" if cell.lost else ""
    best = cell.best
    if best is None:
        return "all lost" + lost
    lr, value = best
    return f"{value:.2e} ({lr:g}){'!' if cell.at_edge else ''}{lost}"


def write_figure(cells: dict[tuple[str, int, int], Cell], path: Path) -> Path:
    """The paper's figure: a panel per K, best F − F* against M (log-log), a line per method; written
    as PNG and PDF (figure_output.save_figure) with no baked-in title: the report prints its caption
    (FedAcSection.figure_caption)."""
    from benchmark.report.figure_output import paper_style, save_figure

    with paper_style():
        fig = _figure(cells)
    return save_figure(fig, path)


def _figure(cells: dict[tuple[str, int, int], Cell]):
    """The figure at most a page wide (figure_output.PAGE_WIDTH), methods styled as in every report figure."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from benchmark.report.figure_output import PAGE_WIDTH, legend_columns
    from benchmark.report.figures import method_styles

    intervals = _intervals(cells)
    methods = list(dict.fromkeys(m for m, _, _ in cells))
    styles = method_styles(methods)
    cols = min(3, len(intervals))
    rows = math.ceil(len(intervals) / cols)
    width = min(PAGE_WIDTH, 2.6 * cols + 0.8)  # a page's width for three panels, less for fewer
    fig = Figure(figsize=(width, min(2.4, width / cols * 0.8) * rows + 0.9), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharey=True)
    any_lost = any_authors = any_band = False
    for ax, k in zip(axes.flat, intervals):
        lost = []  # (M, colour) of cells where no η finished: drawn as × on the panel's top edge
        for method in methods:
            mine = {m: cell for (meth, m, kk), cell in cells.items() if meth == method and kk == k}
            points = sorted((m, cell.best[1]) for m, cell in mine.items() if cell.best)
            style = styles[method]
            if points:  # distinct colours, markers and dashes: at K = 1 FedAc-I is MB-AC-SGD, FedAvg is MB-SGD
                ax.plot(*zip(*points), label=method, alpha=0.85, **{**style, "markevery": None})
            band = sorted(
                (m, min(bests), max(bests))
                for m, cell in mine.items()
                if len(bests := [value for value, _, _ in cell.seed_bests()]) > 1
            )
            if band:  # the seeds' spread: each seed's best over η, lowest to highest
                any_band = True
                ax.fill_between(*zip(*band), color=style["color"], alpha=0.12, linewidth=0)
            lost += [(m, style["color"]) for m, cell in mine.items() if cell.best is None]
            theirs = authors_points(cells, method, k)
            if theirs:  # the authors' released runs: same colour and marker, hollow
                any_authors = True
                ax.scatter(*zip(*theirs), marker=style["marker"], s=24, facecolors="none", edgecolors=style["color"])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        if lost:
            any_lost = True
            ax.scatter(
                *zip(*[(m, 1.0) for m, _ in lost]),
                c=[c for _, c in lost],
                marker="x",
                s=36,
                transform=ax.get_xaxis_transform(),
                clip_on=False,
            )
        ax.set_title(f"K = {k}")  # the panel's label, not a figure title
        ax.set_xlabel("number of workers M")
        ax.grid(True, which="major", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("F(w) − F*  (best η)")
    for ax in list(axes.flat)[len(intervals) :]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if any_lost:
        handles.append(Line2D([], [], color="grey", marker="x", linestyle=""))
        labels.append("every η diverged or failed")
    if any_band:
        handles.append(Patch(color="grey", alpha=0.25, linewidth=0))
        labels.append("shaded: the seeds' range (each seed's best over η)")
    if any_authors:
        handles.append(Line2D([], [], color="grey", marker="o", markerfacecolor="none", linestyle=""))
        labels.append("hollow: the authors' released runs")
    ncol = legend_columns(len(handles), widest=2 * cols)  # two entries per panel's width fit
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False)
    return fig


def fedac_note(cells: dict[tuple[str, int, int], Cell]) -> str:
    """What the tables leave out: runs lost to the choice of η, and the comparison with the authors."""
    return "\n".join(filter(None, [lost_summary(cells), comparison_summary(cells)]))


def lost_summary(cells: dict[tuple[str, int, int], Cell]) -> str:
    lost = sum(c.lost_runs for c in cells.values())
    runs = sum(len(ids) for c in cells.values() for ids in c.jobs.values())
    kinds = defaultdict(int)
    for c in cells.values():
        for fates in c.lost.values():
            for fate in fates:
                kinds[fate] += 1
    detail = ", ".join(f"{n} {fate}" for fate, n in sorted(kinds.items()))
    return (
        f"{runs} runs, {lost} excluded from the choice of η"
        + (f" ({detail})" if detail else "")
        + "; '!' = best η at the grid's edge, 'xN' = N runs diverged, failed or not run; seeds averaged"
    )


def section(suite, jobs: list[Job], summaries: dict[str, dict]) -> Section:
    """The report's FedAc section: the tables, the note and (where a cell has a best η) the figure."""
    from benchmark.papers.audit import off_paper

    cells = collect(jobs, summaries, off_paper(suite, jobs), authors_runs(suite))
    draw = (lambda path: write_figure(cells, path)) if any(c.best for c in cells.values()) else None
    return Section(fedac_entry_tables(cells), fedac_note(cells), draw)
