"""Each method's difference to the table's baseline method, paired over their shared seeds.

A seed fixes the clients' data, their sampling order and the initial model, so two methods run
at the same seed differ only by the method: the per-seed differences d_s = m_s − b_s remove the
seed-to-seed spread that mean ± std of each method carries. The cell is mean(d) with its 95%
Student-t confidence interval, mean(d) ± t(0.975, n−1) · sd(d) / √n over the n seeds at which
both finished (no interval with one shared seed).
"""

from __future__ import annotations

import math

import pandas as pd

from benchmark.report.cells import Cell, Column, is_number, mean_std, number_text, stale_mark
from benchmark.run.job_status import FINISHED

CONFIDENCE = 0.95


def paired_interval(differences: list[float]) -> tuple[float, float | None, float | None]:
    """(mean, low, high) of the 95% Student-t interval of the mean of `differences` (None bounds for n < 2)."""
    from scipy.special import stdtrit  # what scipy.stats.t.ppf computes, without scipy.stats' 0.4 s import

    mean, std = mean_std(differences)
    if std is None:
        return mean, None, None
    half = stdtrit(len(differences) - 1, 0.5 + CONFIDENCE / 2) * std / math.sqrt(len(differences))
    return mean, mean - half, mean + half


def _signed(x: float, unit: str) -> str:
    return ("−" if x < 0 else "+") + number_text(abs(x), unit)


def by_seed(jobs: pd.DataFrame, key: str) -> dict[int, float]:
    """seed -> `key` of each finished job with a number."""
    if key not in jobs:
        return {}
    done = jobs[jobs.status == FINISHED]
    return {int(s): float(v) for s, v in zip(done.seed, done[key]) if is_number(v)}


def beats(better: dict[int, float], worse: dict[int, float], higher_is_better: bool) -> bool:
    """Whether the per-seed values `better` beat `worse` by the paired test: the 95% interval of their
    differences over the shared seeds lies wholly on the better side (never with under 2 shared seeds)."""
    shared = sorted(better.keys() & worse.keys())
    if len(shared) < 2:
        return False
    sign = 1 if higher_is_better else -1
    _, low, _ = paired_interval([sign * (better[s] - worse[s]) for s in shared])
    return low > 0


def paired_cell(jobs: pd.DataFrame, baseline_jobs: pd.DataFrame, key: str, unit: str) -> Cell:
    """The difference of `key` between two settings' jobs over their shared finished seeds."""
    mine, base = by_seed(jobs, key), by_seed(baseline_jobs, key)
    if not mine or not base:
        return Cell("-")
    shared = sorted(mine.keys() & base.keys())
    if not shared:
        return Cell("no shared seed")
    differences = [mine[s] - base[s] for s in shared]
    mean, low, high = paired_interval(differences)
    text = _signed(mean, unit)
    text += f" [{_signed(low, unit)}, {_signed(high, unit)}]" if low is not None else " (1 seed)"
    text += stale_mark(*(frame[frame.status == FINISHED] for frame in (jobs, baseline_jobs)))
    std = mean_std(differences)[1]
    return Cell(
        text,
        mean=mean,
        std=std,
        n=len(shared),
        interval=(low, high) if low is not None else None,
        job_ids=list(jobs.job_id) + list(baseline_jobs.job_id),
    )


def paired_column(baseline: str, headline: Column) -> Column:
    return Column(
        f"{headline.key}-vs-baseline",
        f"Δ {headline.header} vs {baseline} [95% CI, paired seeds]",
        headline.higher_is_better,
        headline.unit,
        ranked=False,
    )
