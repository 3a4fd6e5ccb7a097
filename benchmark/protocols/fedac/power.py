"""How strongly the seed-spread comparison with the authors' runs can tell: per cell the reference
(the authors' one run) against fedbench's seeds (each seed's best over η), pooled over cells:

- the median ratio reference / seed mean, with a percentile bootstrap interval over cells;
- the share of cells where the reference lies below the seed mean;
- the reference's rank among the seeds (seeds below it, ties half): if it were one more seed, each
  rank 0..n is equally likely. The rank-sum test (normal approximation of the sum of the per-cell
  ranks, mean n/2 and variance n(n + 2)/12 each) detects a uniform offset; Pearson's chi-square on
  the rank histogram tests uniformity against any shape (e.g. a reference too often at an extreme);
- the offsets it would detect: the reference scaled by factors, tested again, and fedbench's own
  seeds, each held out as the reference against the others, scaled the same way (the share of
  held-out seeds at which it rejects: its power where nothing differs but the offset).

Counted once per cell of the paper's own (PAPER_OWN): the cells the suite adds and the duplicates
of an identical algorithm are left out. Every p-value treats cells as independent, which they are
not (one w₀ per seed, and one for all of the authors' runs): they overstate the evidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ALPHA = 0.05
RESAMPLES = 10_000  # bootstrap resamples over cells, generator seeded with BOOTSTRAP_SEED
BOOTSTRAP_SEED = 0
FACTORS = (0.67, 0.8, 0.9, 1.1, 1.25, 1.5)  # the reference scaled by each, always reported
# The paper's figures test M = 2^2..2^13 (Section 5); the suites add M = 1, 2 and FedAc-II with the β
# of the authors' code, which no figure of the paper has.
PAPER_MIN_WORKERS = 4
ADDED_METHODS = ("FedAc-II (authors' β)",)
# At K = 1 these are the same algorithm as the method named (one local step, then averaging: the
# minibatch step); their cells are counted once, under the method named.
SAME_AT_K1 = {"MB-AC-SGD": "FedAc-I", "MB-SGD": "FedAvg", "FedAc (vanilla)": "FedAc-I"}


@dataclass(frozen=True)
class Pair:
    """One cell: the reference value and the seeds' values (each seed's best over η)."""

    reference: float
    seeds: tuple[float, ...]
    ids: tuple[int, ...] = ()  # the seeds' numbers, in the order of `seeds` (to hold one seed out across cells)

    @property
    def ratio(self) -> float:
        return self.reference / (sum(self.seeds) / len(self.seeds))

    def scaled(self, factor: float) -> Pair:
        return Pair(self.reference * factor, self.seeds, self.ids)


def pairs_of(cells: dict) -> tuple[list[Pair], int, int]:
    """(pairs, cells added by the suite, duplicate cells) over the compared cells of `cells`
    ((method, M, K) -> report.Cell) with the authors' value and a seed's best."""
    methods = {method for method, _, _ in cells}
    pairs, added, duplicates = [], 0, 0
    for (method, workers, k), cell in cells.items():
        by_seed = cell.bests_by_seed()
        bests = tuple(value for value, _, _ in by_seed.values())
        if cell.authors is None or cell.not_compared or not bests:
            continue
        if not is_paper_own(method, workers):
            added += 1
        elif is_duplicate(method, k, methods):
            duplicates += 1
        else:
            pairs.append(Pair(cell.authors[0], bests, tuple(by_seed)))
    return pairs, added, duplicates


def is_paper_own(method: str, workers: int) -> bool:
    return method not in ADDED_METHODS and workers >= PAPER_MIN_WORKERS


def is_duplicate(method: str, k: int, methods: set[str]) -> bool:
    """At K = 1, a method identical to another of the suite's is that method's cell again."""
    return k == 1 and SAME_AT_K1.get(method) in methods


def rank(reference: float, seeds: tuple[float, ...]) -> float:
    """Seeds below the reference, ties counted half."""
    return sum(1.0 if s < reference else 0.5 if s == reference else 0.0 for s in seeds)


def rank_sum_z(pairs: list[Pair]) -> float:
    """The rank-sum statistic, standardised: above 0 when the reference ranks high (see the module's note)."""
    total = sum(rank(p.reference, p.seeds) for p in pairs)
    mean = sum(len(p.seeds) / 2 for p in pairs)
    var = sum(len(p.seeds) * (len(p.seeds) + 2) / 12 for p in pairs)
    return (total - mean) / math.sqrt(var)


def rank_sum_p(pairs: list[Pair]) -> float:
    """Two-sided p-value of the rank-sum test (normal approximation)."""
    from scipy import stats  # 1 s to import: only where the authors' runs are compared, not every FedAc run

    return float(2 * stats.norm.sf(abs(rank_sum_z(pairs))))


def rank_histogram(pairs: list[Pair]) -> list[int] | None:
    """Cells per rank 0..n (ties rounded down), when every cell has the same n seeds."""
    sizes = {len(p.seeds) for p in pairs}
    if len(sizes) != 1:
        return None
    counts = [0] * (sizes.pop() + 1)
    for p in pairs:
        counts[int(rank(p.reference, p.seeds))] += 1
    return counts


def median_interval(ratios: list[float]) -> tuple[float, float, float]:
    """(median, 2.5 %, 97.5 %) of the median ratio: percentile bootstrap over cells."""
    values = np.asarray(ratios)
    draws = np.random.default_rng(BOOTSTRAP_SEED).choice(values, size=(RESAMPLES, len(values)))
    low, high = np.percentile(np.median(draws, axis=1), [2.5, 97.5])
    return float(np.median(values)), float(low), float(high)


def held_out(pairs: list[Pair]) -> list[list[Pair]]:
    """Per seed: in each cell where it has a value, that value as the reference against the cell's other
    seeds (cells with fewer than 3 seeds left out). Seeds are matched across cells by `ids` (by position
    where a pair has none)."""
    out: dict[int, list[Pair]] = {}
    for p in pairs:
        if len(p.seeds) < 3:
            continue
        for i, seed in enumerate(p.ids or range(len(p.seeds))):
            out.setdefault(seed, []).append(Pair(p.seeds[i], p.seeds[:i] + p.seeds[i + 1 :]))
    return [out[seed] for seed in sorted(out)]


def smallest_detected(own: list[list[Pair]], up: bool) -> float | None:
    """The smallest offset (1.01, 1.02, ... up to 3x; below: its inverse) at which every held-out seed,
    scaled, has a rank-sum z beyond the two-sided 5 % critical value and beyond every unscaled held-out
    seed's z on that side (the seeds' own z spread: the null with the cells' dependence in it); None
    when none up to 3x."""
    from scipy import stats

    side = 1 if up else -1
    critical = max([stats.norm.isf(ALPHA / 2)] + [side * rank_sum_z(cells) for cells in own])
    for step in range(1, 201):
        factor = 1 + step / 100 if up else 1 / (1 + step / 100)
        if all(side * rank_sum_z([p.scaled(factor) for p in cells]) > critical for cells in own):
            return factor
    return None


def power_summary(pairs: list[Pair], added: int, duplicates: int) -> str:
    """The lines the report prints under the comparison (nothing without cells)."""
    if not pairs:
        return ""
    from scipy import stats

    n = len(pairs)
    median, low, high = median_interval([p.ratio for p in pairs])
    below = sum(p.reference < sum(p.seeds) / len(p.seeds) for p in pairs)
    hist = rank_histogram(pairs)
    chi = f"; chi-square on the rank histogram p = {stats.chisquare(hist).pvalue:.2g}" if hist else ""
    scaled = ", ".join(f"x{f:g} p = {rank_sum_p([p.scaled(f) for p in pairs]):.2g}" for f in FACTORS)
    own = [cells for cells in held_out(pairs) if cells]
    power = ", ".join(
        f"x{f:g} {sum(rank_sum_p([p.scaled(f) for p in cells]) < ALPHA for cells in own)} of {len(own)}"
        for f in (1.0, *FACTORS)
    )
    zs = [rank_sum_z(cells) for cells in own]
    detected = [smallest_detected(own, up) for up in (True, False)] if own else []
    smallest = " and ".join(f"x{f:.2f}" if f else "none within 3x" for f in detected)
    return "\n".join(
        filter(
            None,
            [
                f"stated power, over the paper's own cells, each once ({n}; left out: {added} cells the suite adds, "
                f"{duplicates} duplicates of an identical algorithm at K = 1): median ratio authors / fedbench seed mean "
                f"{median:.3f} (95 % bootstrap interval {low:.3f}-{high:.3f}, {RESAMPLES} resamples of the cells, "
                f"seed {BOOTSTRAP_SEED}); the authors' value below the seed mean in {below} of {n} cells "
                f"({100 * below / n:.1f} %)",
                "the authors' rank among the seeds (seeds below it)"
                + (f", cells per rank 0..{len(hist) - 1}: {' '.join(map(str, hist))}" if hist else "")
                + f"; rank-sum test z = {rank_sum_z(pairs):.1f}, p = {rank_sum_p(pairs):.2g}{chi}; "
                f"the authors' values scaled: {scaled}",
                f"offsets detected (rank-sum test, p < {ALPHA}) with each fedbench seed held out as the reference "
                f"against the others, scaled: {power} held-out seeds (unscaled, their z from {min(zs):.1f} to {max(zs):.1f}: "
                "the null distribution with the cells' dependence in it); "
                f"smallest offsets detected for every held-out seed, z beyond 1.96 and beyond every unscaled "
                f"held-out seed's (scanned in steps of 1 %): {smallest}"
                if own
                else "",
                "p-values treat cells as independent; they are not (one w₀ per seed, one for all of the authors' runs)",
            ],
        )
    )
