"""K local steps of the FedAc authors' own arithmetic (`split.samples: authors_numpy`), for FedAc and
FedAvg rounds of more than one step.

Their `logistic.py` computes every step elementwise over all d coordinates of every worker, in
float64:

    p = (1/β) w + (1 − 1/β) w_ag,   g = mean_s −y (1 − σ(y x·p)) x + λ p,
    w_ag ← p − η g,   w ← (1 − 1/α) w + (1/α) p − γ g          (FedAvg: w ← w − η (… + λ w))

(x·p a numpy sum over the d features, pairwise; σ scipy's expit), and averages the workers with
`pool.mean(axis=0)` (row after row, then ÷ M). LocalSteps (engine.py) computes the same recursion
with its linear part multiplied out once (X' = T X − v ℓ' xᵀ, T's entries such as (1 − ηλ)/β each
rounded once) and lazily (only where x is non-zero). That is the same arithmetic to rounding, but
a coefficient rounded once errs the same way at every step, where theirs rounds each value afresh:
on a run whose rounding grows (FedAc-I, λ = 1e-4, η = 0.5, M = 8, K = 2) that lands 8.6e-6 from
their loss, while every rearrangement of their own elementwise form stays within 1.2e-6 of it
(docs/reproductions/fedac/replay/README.md). So on their stream the steps are theirs, in their order.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from benchmark.fl.fedac import coefficients

PAIRWISE_BLOCK = 128  # numpy's PW_BLOCKSIZE: sums up to this long use 8 accumulators, longer ones split


class AuthorsSteps:
    """The interface of engine.LocalSteps (`round`) on the authors' elementwise arithmetic."""

    def __init__(self, jobs, x_dense: np.ndarray, y: np.ndarray, steps: int):
        self.x, self.y = np.ascontiguousarray(x_dense, dtype=np.float64), np.asarray(y, dtype=np.float64)
        # a row per job: fedac (1 or 0), 1/β, 1 − 1/β, 1 − 1/α, 1/α, γ, η, λ; as their train() computes them
        rows = []
        for job in jobs:
            lam, eta = job.local.weight_decay, job.local.lr_schedule.round_lr(0)
            term = job.method.term("fedac")
            if term is None:
                rows.append([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, eta, lam])
                continue
            p = term.params
            c = coefficients(p.variant, eta, p.mu if p.mu is not None else lam, steps, p.beta_rule)
            rows.append([1.0, 1 / c.beta, 1 - (1 / c.beta), 1 - (1 / c.alpha), 1 / c.alpha, c.gamma, eta, lam])
        self.params = np.array(rows, dtype=np.float64)

    def broadcast(self, state: np.ndarray, workers: int) -> np.ndarray:
        """Their first `broadcast_avg`: the mean of M copies of w₀ (not w₀ itself when M·w₀ rounds)."""
        return np.repeat(state[None], workers, 0).mean(0)

    def one_step(self, state: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A round of one step per worker (the minibatch methods, or K = 1) as their `mbsgd` / `mbasgd`:
        one gradient over the round's M·K·batch examples in their draw order, −((y (1 − σ(y X p)))ᵀ X) / n
        + λ p, X their rows as one dense matrix (their order of the sum: fedbench's sum over distinct
        rows, or the same sum in chunks, lands up to 1e-5 away on runs that amplify rounding), then
        their step. The mean state (B, 2, d) and the mean training loss (B,)."""
        from scipy.special import expit  # their σ (scipy.stats.logistic.cdf), bit for bit

        rows = np.asarray(idx).transpose(1, 2, 0).reshape(-1)  # authors_positions' (M, K, batch) → their draw
        xs, ys = self.x[rows], self.y[rows]
        fedac, inv_beta, rest_beta, keep, inv_alpha, gamma, eta, lam = (c[:, None] for c in self.params.T)
        w, ag = state[:, 0], state[:, 1]
        point = np.where(fedac == 1, inv_beta * w + rest_beta * ag, ag)
        grad, loss = np.empty_like(point), np.empty(len(point))
        for b, p in enumerate(point):  # their code is one job: a matrix-vector product each
            margin = (xs @ p) * ys
            grad[b] = -((ys * (1 - expit(margin))).T @ xs) / len(ys)
            loss[b] = np.logaddexp(0.0, -margin).mean()
        grad = grad + lam * point
        new_w = np.where(fedac == 1, keep * w + inv_alpha * point - gamma * grad, w)
        return np.stack([new_w, point - eta * grad], 1), loss

    def round(self, state: np.ndarray, idx: np.ndarray, with_loss: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """engine.LocalSteps.round: the workers' mean state (B, 2, d) and the mean training loss."""
        m, k, bs = idx.shape
        mean, loss = authors_round(
            np.ascontiguousarray(np.asarray(state).transpose(2, 1, 0)),
            self.x,
            self.y,
            np.ascontiguousarray(idx),
            self.params,
            with_loss,
        )
        return np.ascontiguousarray(mean.transpose(2, 1, 0)), loss / (m * k * bs)


@njit(cache=True)
def authors_round(start, x, y, idx, params, with_loss):
    """start (d, 2, B): (w, w_ag) per job (FedAvg: its w in the second row); x (n, d) dense float64;
    idx (M, K, batch); params (B, 8) as AuthorsSteps builds them. Returns the workers' mean state
    (d, 2, B) and the training loss (B,) summed over workers, steps and batch (without `with_loss`,
    only its non-finite terms)."""
    d, _, b_count = start.shape
    m_count, k, bs = idx.shape
    total = np.zeros((d, 2, b_count))
    loss = np.zeros(b_count)
    w = np.empty((d, b_count))
    ag = np.empty((d, b_count))
    p = np.empty((d, b_count))
    g = np.empty((d, b_count))
    term = np.empty(d)
    for m in range(m_count):
        w[:] = start[:, 0, :]
        ag[:] = start[:, 1, :]
        for j in range(k):
            for b in range(b_count):
                fedac, inv_beta, rest_beta = params[b, 0], params[b, 1], params[b, 2]
                for col in range(d):
                    p[col, b] = inv_beta * w[col, b] + rest_beta * ag[col, b] if fedac else ag[col, b]
                    g[col, b] = 0.0
                for s in range(bs):  # np.mean over the batch axis: a sum row after row, then ÷ batch
                    row = idx[m, j, s]
                    for col in range(d):
                        term[col] = x[row, col] * p[col, b]
                    yz = y[row] * _pairwise_sum(term, 0, d)
                    slope = -y[row] * (1.0 - 1.0 / (1.0 + math.exp(-yz)))  # their −y (1 − expit(y x·p))
                    margin = -yz
                    if with_loss:
                        loss[b] += max(margin, 0.0) + math.log1p(math.exp(-abs(margin)))
                    elif not margin < np.inf:  # NaN or +inf: the loss is not finite
                        loss[b] += margin
                    for col in range(d):
                        g[col, b] += slope * x[row, col]
                for col in range(d):
                    g[col, b] = g[col, b] / bs + params[b, 7] * p[col, b]
                eta = params[b, 6]
                if fedac:
                    keep, inv_alpha, gamma = params[b, 3], params[b, 4], params[b, 5]
                    for col in range(d):
                        w[col, b] = keep * w[col, b] + inv_alpha * p[col, b] - gamma * g[col, b]
                        ag[col, b] = p[col, b] - eta * g[col, b]
                else:
                    for col in range(d):
                        ag[col, b] = ag[col, b] - eta * g[col, b]
        for col in range(d):
            for b in range(b_count):
                total[col, 0, b] += w[col, b]
                total[col, 1, b] += ag[col, b]
    return total / m_count, loss


@njit(cache=True)
def _pairwise_sum(a, lo, n):
    """numpy's pairwise summation of a[lo:lo + n] (its order of additions, so its rounding): blocks of
    up to PAIRWISE_BLOCK summed by _block_sum, longer spans split in two (at a multiple of 8) and
    the halves' sums added, left + right. Without recursion (numba's cache cannot hold a recursive
    function): the spans' left edges in order, and a stack of partial sums with their depths."""
    if n <= PAIRWISE_BLOCK:
        return _block_sum(a, lo, n)
    todo_lo, todo_n, todo_depth = np.empty(64, np.int64), np.empty(64, np.int64), np.empty(64, np.int64)
    sums, depths = np.empty(64), np.empty(64, np.int64)
    todo_lo[0], todo_n[0], todo_depth[0] = lo, n, 0
    pending, stacked = 1, 0
    while pending:
        pending -= 1
        start, size, depth = todo_lo[pending], todo_n[pending], todo_depth[pending]
        if size > PAIRWISE_BLOCK:
            half = size // 2
            half -= half % 8
            # the right half below the left on the to-do stack: the left is summed first
            todo_lo[pending], todo_n[pending], todo_depth[pending] = start + half, size - half, depth + 1
            todo_lo[pending + 1], todo_n[pending + 1], todo_depth[pending + 1] = start, half, depth + 1
            pending += 2
            continue
        total = _block_sum(a, start, size)
        # a right half completes its pair: left + right, and so on up
        while stacked and depths[stacked - 1] == depth:
            stacked -= 1
            total = sums[stacked] + total
            depth -= 1
        sums[stacked], depths[stacked] = total, depth
        stacked += 1
    return sums[0]


@njit(cache=True)
def _block_sum(a, lo, n):
    """numpy's sum of a span of at most PAIRWISE_BLOCK: 8 accumulators, combined pairwise, then the rest."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    top = n - n % 8
    for i in range(lo + 8, lo + top, 8):
        r0, r1, r2, r3 = r0 + a[i], r1 + a[i + 1], r2 + a[i + 2], r3 + a[i + 3]
        r4, r5, r6, r7 = r4 + a[i + 4], r5 + a[i + 5], r6 + a[i + 6], r7 + a[i + 7]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(lo + top, lo + n):
        res += a[i]
    return res
