"""Each method's difference to the table's baseline method, paired over their shared seeds.

A seed fixes the clients' data, their sampling order and the initial model, so two methods run
at the same seed differ only by the method: the per-seed differences d_s = m_s − b_s remove the
seed-to-seed spread that mean ± std of each method carries. The cell is mean(d) with its 95%
Student-t confidence interval, mean(d) ± t(0.975, n−1) · sd(d) / √n over the n seeds at which
both finished (no interval with one shared seed).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from benchmark.report.cells import Cell, Column, is_number, mean_std, number_text, stale_mark
from benchmark.store.job_status import FINISHED

if TYPE_CHECKING:
    import pandas as pd

CONFIDENCE = 0.95


def paired_interval(differences: list[float]) -> tuple[float, float | None, float | None]:
    """(mean, low, high) of the 95% Student-t interval of the mean of `differences` (None bounds for n < 2)."""
    mean, std = mean_std(differences)
    if std is None:
        return mean, None, None
    half = t_quantile(len(differences) - 1) * std / math.sqrt(len(differences))
    return mean, mean - half, mean + half


# Student's t at 0.5 + CONFIDENCE / 2 for 1..30 degrees of freedom, as scipy.special.stdtrit gives it
# (tests/report/test_paired_quantiles.py): a terminal table of a few seeds imports no scipy (0.2-0.6 s)
T_QUANTILES = (
    12.706204736174694,
    4.302652729749462,
    3.1824463052837078,
    2.7764451051977934,
    2.5705818356363146,
    2.4469118511449786,
    2.364624251592784,
    2.306004135204166,
    2.262157162798205,
    2.228138851986274,
    2.200985160091639,
    2.1788128296672284,
    2.1603686564627913,
    2.144786687917804,
    2.131449545559776,
    2.1199052992212546,
    2.1098155778333156,
    2.1009220402410382,
    2.0930240544083087,
    2.085963447265864,
    2.0796138447276795,
    2.0738730679040254,
    2.0686576104190486,
    2.0638985616280245,
    2.0595385527532972,
    2.0555294386428735,
    2.0518305164802846,
    2.0484071417952454,
    2.045229642132703,
    2.0422724563012378,
)


def t_quantile(df: int) -> float:
    """scipy.stats.t.ppf(0.5 + CONFIDENCE / 2, df): from T_QUANTILES where it holds it."""
    if CONFIDENCE == 0.95 and 1 <= df <= len(T_QUANTILES):
        return T_QUANTILES[df - 1]
    from scipy.special import stdtrit  # what scipy.stats.t.ppf computes, without scipy.stats' 0.4 s import

    return float(stdtrit(df, 0.5 + CONFIDENCE / 2))


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
