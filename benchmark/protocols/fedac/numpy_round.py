"""One round of K local steps of M workers in plain numpy, for cells too small to repay numba's start-up.

The same computation as kernel.py's `local_round` (same arguments, same result), with the workers side by
side instead of one after another: each of the K steps is a few numpy calls over all M workers and B jobs
(gather the step's rows of every worker's U, score, push the data term back into those rows). Python's
per-call overhead is paid K times a round, not M·K·batch times, and numba is never imported: loading
its cached kernel costs about half a CPU second a process (it imports scipy.linalg), more than a small
cell's whole computation. `prefers_numpy` (below) says which cells that is.

float32 as the kernel (float64 when given float64); the sums run in another order (a score's terms,
the workers' mean), so the two agree to float32 rounding, not bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from benchmark.job.config import JobConfig

# The cost model, CPU seconds on the 2-core Intel Xeon VM of benchmarks/README.md (a9a, 13 η side by side):
NUMBA_LOAD_S = 0.45  # numba imported and the cached kernel loaded, once a process (0.35-0.5 measured)
NUMBA_WORKER_STEP_S = 0.21e-6  # the kernel, per worker and step (0.20-0.27 µs at M = 8 .. 1,024)
# this module, per step: its numpy calls' own overhead, and per worker; fitted at M = 8 and 128 (a step 21 and
# 102 µs, 53 at 64, with ~20 calls a step), then scaled by the ten-call step's measured ratio to that one,
# interleaved (0.69x at M = 8, 0.76x at 128: 14.5 and 77 µs); 136 µs measured at 256, where the choice now falls
# against numba (0.56 CPU-s of steps at T = 4,096, numba 0.67); beyond, U leaves L2 and a worker costs more
NUMPY_STEP_S = 10.3e-6
NUMPY_WORKER_STEP_S = 0.52e-6

# pins the choice (True: numpy, False: numba) where the caller knows better than the shape it hands the engine:
# plan --budget times a batch cut to fewer rounds and workers on the path the whole batch takes (cost.py)
PINNED: ContextVar[bool | None] = ContextVar("fedac_numpy_round_pinned", default=None)


def prefers_numpy(job: JobConfig) -> bool:
    """Whether the job's K local steps cost less here than numba's start-up plus the kernel, by the model above.
    The job's own shape decides (rounds, workers, steps, batch), not how many jobs share its batch: a job's
    numbers then never depend on its batch-mates (a resumed job is computed alone, or with others). The
    model leaves out that a process which has loaded numba once need not again, for the same reason."""
    pinned = PINNED.get()
    if pinned is not None:
        return pinned
    steps = job.rounds * job.local.steps * job.local.batch_size
    in_numpy = steps * (NUMPY_STEP_S + job.num_clients * NUMPY_WORKER_STEP_S)
    return in_numpy < NUMBA_LOAD_S + steps * job.num_clients * NUMBA_WORKER_STEP_S


@contextmanager
def pinned(in_numpy: bool) -> Iterator[None]:
    token = PINNED.set(in_numpy)
    try:
        yield
    finally:
        PINNED.reset(token)


def padded_last(t: np.ndarray, size: int) -> np.ndarray:
    """t (..., B) with zeros after its last axis's B values, up to `size`: a new contiguous array (np.pad's
    general machinery costs ~30 µs a call, and it is called twice a round)."""
    out = np.zeros((*t.shape[:-1], size), dtype=t.dtype)
    out[..., : t.shape[-1]] = t
    return out


def local_round(start, cols, vals, binary, y, idx, reads, enters, folds, fold_after, with_loss, live):
    """kernel.local_round's arguments and result, computed with all workers at once (see that docstring).

    A step is ten numpy calls over all M workers and B jobs, each on the step's M·nnz rows of U: numpy's
    per-call overhead is most of a step at M = 64, so what does not depend on U is computed once a round
    for all K steps (each worker's ±y times the reads and the enters), the scratch buffers are allocated once
    a round, and the losses are taken from the round's stored margins after its last step."""
    d, c, padded = start.shape
    m_count, k, bs = idx.shape
    nnz, cb = cols.shape[1], c * live
    dtype = start.dtype
    first = np.ascontiguousarray(start[..., :live]).reshape(d, cb)
    reads, enters = reads[..., :live], enters[..., :live]
    # every worker's U (d, c·B) stacked, with one more row, d, where a sparse row's padding points: kept 0
    u = np.zeros((m_count, d + 1, cb), dtype=dtype)
    u[:, :d] = first
    flat = u.reshape(m_count * (d + 1), cb)
    # the same rows as single items of c·B values: a scatter of whole items copies each in one go (half the µs)
    whole_rows = flat.view(np.dtype((np.void, cb * flat.itemsize)))[:, 0]
    # the rows of `flat` each example touches, (K, batch, nnz·M): a step's rows gathered slot by slot, (nnz, M, c·B),
    # so that summing them and adding to them run over whole contiguous (M, c·B) blocks (2-3x fewer µs than
    # (M, nnz, c·B) at M = 64); its values likewise (K, batch, nnz, M, 1)
    at = ((np.arange(m_count, dtype=np.intp) * (d + 1))[:, None, None, None] + cols[idx]).transpose(1, 2, 3, 0)
    at = np.ascontiguousarray(at).reshape(k, bs, nnz * m_count)
    x = None if binary else np.ascontiguousarray(vals[idx].transpose(1, 2, 3, 0))[..., None]
    sign = np.ascontiguousarray(y[idx].transpose(1, 2, 0))[..., None, None]  # (K, batch, M, 1, 1): y = ±1
    # y·r P_k: U x times it, summed over the c rows of X, is the margin yz; −y P⁻¹v: the data term's direction
    signed_reads = (sign * reads[:, None, None]).reshape(k, bs, m_count, cb)
    signed_enters = -sign * enters[:, None, None]  # (K, batch, M, c, B)
    margins = np.empty((k, bs, m_count, live), dtype=dtype)  # yz of every step: the loss, after the round
    rows = np.empty((bs, m_count * nnz, cb), dtype=dtype)
    # the scratch buffers and their views, made once a round: a step only indexes what changes with j
    gathered = [r.reshape(nnz, m_count, cb) for r in rows]
    as_items = [r.view(whole_rows.dtype)[:, 0] for r in rows]
    ux = np.empty((m_count, cb), dtype=dtype)
    blocks = [ux[:, q * live : (q + 1) * live] for q in range(c)]
    share = np.empty((m_count, live), dtype=dtype)
    share_of_each = share[:, None, :]
    push = np.empty((m_count, c, live), dtype=dtype)
    gained = push.reshape(m_count, cb)
    padding = u[:, d]
    steps = zip(at, signed_reads, margins, signed_enters, x if x is not None else [None] * k, fold_after, folds)
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging job's inf and NaN, as in the kernel
        for at_j, reads_j, margins_j, enters_j, x_j, fold_j, fold in steps:
            # the batch's rows of U, all gathered (and scored) before any update: one gradient point
            for s in range(bs):
                flat.take(at_j[s], axis=0, out=rows[s], mode="clip")  # "clip": unbuffered; never out of range
            for s in range(bs):
                if binary:  # U x: the sum of the row's coordinates
                    np.add.reduce(gathered[s], axis=0, out=ux)
                else:
                    np.einsum("nmo,nmq->mq", x_j[s], gathered[s], out=ux)
                # yz, job by job: an element-wise product and a sum over the c blocks (a matrix product would
                # mix one job's inf into the others' scores as inf·0 = NaN)
                margin = margins_j[s]
                if c == 1:
                    np.multiply(ux, reads_j[s], out=margin)
                else:
                    np.multiply(ux, reads_j[s], out=ux)
                    np.add(blocks[0], blocks[1], out=margin)
                for block in blocks[2:]:
                    margin += block
                np.exp(margin, out=share)
                share += 1  # 1 + e^{yz}: ℓ'(z) = −y σ(−yz) = −y / (1 + e^{yz})
                np.divide(enters_j[s], share_of_each, out=push)
                # a row's columns are distinct: one example writes each coordinate once; with batch > 1 the
                # examples' rows may share columns, so each adds to U as the previous one left it
                if bs == 1:
                    gathered[s] += gained if binary else x_j[s] * gained
                    whole_rows[at_j[s]] = as_items[s]  # reuses the gathered rows
                else:
                    step = gained if binary else x_j[s] * gained
                    flat[at_j[s]] += np.broadcast_to(step, gathered[s].shape).reshape(-1, cb)
            padding.fill(0)
            if fold_j:
                fold = fold[..., :live]  # (c, c, B)
                u[:] = np.einsum("qrb,mwrb->mwqb", fold, u.reshape(m_count, d + 1, c, live)).reshape(u.shape)
        # ℓ = softplus(−yz); without `with_loss` the margins' negatives themselves, summed in float64: finite
        # exactly when every one is (no float32 value overflows a float64 sum)
        np.negative(margins, out=margins)
        if with_loss:
            np.logaddexp(0, margins, out=margins)
        total = margins.reshape(-1, live).sum(0, dtype=np.float64)
    if not with_loss:
        total = np.where(np.isfinite(total), 0.0, total)
    mean = first + (u[:, :d] - first).sum(0) / dtype.type(m_count)
    mean = mean.reshape(d, c, live)
    return padded_last(mean, padded), padded_last(total, padded)
