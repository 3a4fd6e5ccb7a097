"""The compiled inner loop of the batched FedAc engine (engine.py): one round of K
local steps of M workers for B jobs at once, each step touching only the non-zero coordinates of
its examples. numba compiles it once per machine (cache=True keeps the machine code on disk).

A worker's K steps depend on no other worker, so workers run one after another and only one
worker's state is ever held: U (d, c·B), a coordinate's c·B values contiguous, so that reading or
updating a coordinate is one vector operation over every job. float32 throughout, as the
per-client loop computes (float64 when given float64: the authors' sample stream, engine.py); no
fastmath, so a diverging job's inf and NaN propagate as they do there.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def local_round(start, cols, vals, binary, y, idx, reads, enters, folds, fold_after, with_loss, live):
    """The workers' mean lazy state U after K steps from `start`, and the summed training loss.

    start (d, c, B): every worker's U at step 0; cols (n, nnz) unsigned integers, padded with d after a row's
    non-zeros; vals (n, nnz) float32 (unread when `binary`: every non-zero is 1); y (n,) ±1;
    idx (M, K, batch) example rows; reads, enters (K, c, B): how U gives the score at a step's
    gradient point and how the step's data term, already scaled by −1/batch, enters U;
    folds (K, c, c, B) with fold_after (K,) bool: U ← fold U after step j (every coordinate);
    the jobs after the first `live` only pad the vectors (idle: nothing computed for them).
    Returns (mean over workers of U (d, c, B), loss (B,) summed over workers, steps and batch;
    without `with_loss`, only its non-finite terms: 0 when it is finite)."""
    d, c, b_count = start.shape
    m_count, k, bs = idx.shape
    cb = c * b_count
    first = start.reshape(d, cb)
    reads, enters = reads.reshape(k, cb), enters.reshape(k, cb)
    u = np.empty((d, cb), dtype=start.dtype)
    total = np.zeros((d, cb), dtype=start.dtype)
    ux = np.empty((bs, cb), dtype=start.dtype)  # U x of each example of the minibatch
    push = np.zeros((bs, cb), dtype=start.dtype)  # what U gains per unit of x from each example
    folded = np.empty(c, dtype=start.dtype)
    loss = np.zeros(b_count, dtype=np.float64)
    one = np.float32(1)
    # Without folds a worker changes U only at the coordinates it touched: only those are summed
    # (as U − start) and reset for the next worker, not all d (K = 2: 28 of 123). A fold changes
    # every coordinate: then U is summed and reset whole.
    whole = fold_after.any()
    touched = np.zeros(d, dtype=np.bool_)
    order = np.empty(d, dtype=np.int64)  # the touched coordinates, the first `count` of them
    u[:] = first
    for m in range(m_count):
        count = 0
        for j in range(k):
            for s in range(bs):  # every score of the minibatch before any update: one gradient point
                ux[s] = 0
                _add_row_times(ux[s], cols, vals, binary, idx[m, j, s], u)
            for s in range(bs):
                row = idx[m, j, s]
                minus_y = -y[row]
                for b in range(live):  # the jobs after `live` pad the vectors: idle, never scored
                    z = np.float32(0)
                    for q in range(c):
                        z += reads[j, q * b_count + b] * ux[s, q * b_count + b]
                    margin = minus_y * z  # ℓ = log(1 + e^{−yz}) = softplus(−yz), ℓ' = −y σ(−yz)
                    if with_loss:
                        loss[b] += max(margin, np.float32(0)) + math.log1p(math.exp(-abs(margin)))
                    elif not margin < np.inf:  # NaN or +inf: the loss is not finite
                        loss[b] += margin
                    # σ(margin) without a branch on its sign (random from step to step: mispredicted half the
                    # time): e^{−margin} overflows to inf below −88, and 1 / (1 + inf) = 0 is σ's limit
                    slope = minus_y * (one / (one + math.exp(-margin)))
                    for q in range(c):
                        push[s, q * b_count + b] = enters[j, q * b_count + b] * slope
                for t in range(cols.shape[1]):
                    col = cols[row, t]
                    if col >= d:
                        break
                    x = one if binary else vals[row, t]
                    for i in range(cb):
                        u[col, i] += push[s, i] * x
                    if not touched[col]:
                        touched[col], order[count] = True, col
                        count += 1
            if fold_after[j]:
                for col in range(d):
                    for b in range(b_count):
                        for q in range(c):
                            acc = np.float32(0)
                            for r in range(c):
                                acc += folds[j, q, r, b] * u[col, r * b_count + b]
                            folded[q] = acc
                        for q in range(c):
                            u[col, q * b_count + b] = folded[q]
        if whole:
            total += u
            u[:] = first
        for n in range(count):
            col = order[n]
            touched[col] = False
            if not whole:
                for i in range(cb):
                    total[col, i] += u[col, i] - first[col, i]
                    u[col, i] = first[col, i]
    mean = total / np.float32(m_count) if whole else first + total / np.float32(m_count)
    return mean.reshape(d, c, b_count), loss


@njit(cache=True)
def _add_row_times(out, cols, vals, binary, row, w):
    """out += x w for the sparse row `row` of (cols, vals) and w (d, width): U x per job and
    coordinate of FedAc's state."""
    d = w.shape[0]
    for t in range(cols.shape[1]):
        col = cols[row, t]
        if col >= d:
            break
        if binary:
            for i in range(out.shape[0]):
                out[i] += w[col, i]
        else:
            x = vals[row, t]
            for i in range(out.shape[0]):
                out[i] += x * w[col, i]
