"""Paper vs measured: one table per dataset entry, a row per method, reference beside measured."""

from __future__ import annotations

import statistics

from rich.markup import escape
from rich.table import Table

from benchmark.run.status import has_numbers, status_label

from benchmark.suite.expand import Job
from benchmark.suite.schema import Suite


def _fmt(v, metric: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.0f}" if metric.startswith("rounds_to") else f"{v:.2f}"
    return str(v)


def _mean(values: list):
    """Mean over seeds; rounds_to with a '>R' among them stays '>R'."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    if any(isinstance(v, str) for v in values):
        return next(v for v in values if isinstance(v, str))
    return statistics.fmean(values)


def _match_reference(label: str, rows: dict) -> list | None:
    base = label.split("[")[0]
    lowered = {k.lower(): v for k, v in rows.items()}
    return rows.get(label) or rows.get(base) or lowered.get(base.lower())


def _matched_row(label: str, rows: dict) -> str | None:
    ref = _match_reference(label, rows)
    return next((k for k, v in rows.items() if v is ref), None)


def result_tables(suite: Suite, jobs: list[Job], summaries: dict[str, dict]) -> list[Table]:
    tables = []
    for d_index, entry in enumerate(suite.datasets):
        d_jobs = [j for j in jobs if j.dataset_index == d_index]
        if not d_jobs:
            continue
        metrics = d_jobs[0].config.metrics
        ref = entry.reference
        title = f"{entry.label or entry.name} ({entry.split.kind}, {d_jobs[0].config.num_clients} clients)"
        table = Table(title=escape(title + (f" — paper: {ref.source}" if ref else "")))
        table.add_column("method")
        table.add_column("seeds", justify="right")
        for m in metrics:
            table.add_column(m + " (measured)", justify="right")
            if ref and m in ref.metrics:
                table.add_column(m + " (paper)", justify="right", style="dim")
        table.add_column("final acc", justify="right")
        convex = any(j.config.suboptimality for j in d_jobs)
        if convex:
            table.add_column("final F − F*", justify="right")
        table.add_column("status")
        by_label: dict[str, list[dict]] = {}
        for job in d_jobs:
            by_label.setdefault(job.setting_label, []).append(summaries.get(job.id, {"status": "not run"}))
        for label, all_sums in by_label.items():
            ref_row = _match_reference(label, ref.rows) if ref else None
            sums = [s for s in all_sums if has_numbers(s)]  # diverged, failed, unfinished: no numbers
            row = [escape(label), f"{len(sums)}/{len(all_sums)}" if len(sums) != len(all_sums) else str(len(sums))]
            for m in metrics:
                row.append(_fmt(_mean([s.get("metrics", {}).get(m) for s in sums]), m))
                if ref and m in ref.metrics:
                    cell = _fmt(ref_row[ref.metrics.index(m)], m) if ref_row else "-"
                    contradicted = ref_row and ref.is_contradicted(_matched_row(label, ref.rows), m)
                    row.append(cell + " †" if contradicted else cell)
            row.append(_fmt(_mean([s.get("final_acc") for s in sums])))
            if convex:
                subopt = _mean([s.get("final_subopt") for s in sums])
                row.append(f"{subopt:.3e}" if isinstance(subopt, float) else "-")
            statuses = sorted({status_label(s) for s in all_sums})
            row.append(escape(",".join(statuses)))
            table.add_row(*row)
        if ref and ref.contradicted:
            table.caption = "† paper cell its own numbers contradict (not a target): " + "; ".join(
                f"{c.row} {c.metric}: {c.reason}" for c in ref.contradicted)
        tables.append(table)
    return tables
