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
# this module, per step: its numpy calls' own overhead, and per worker; fitted at M = 8 and 128, where the
# choice falls (a step 21 and 102 µs; 53 at 64); beyond, U leaves L2 and a worker costs more (1.1 µs at 1,024)
NUMPY_STEP_S = 16e-6
NUMPY_WORKER_STEP_S = 0.68e-6

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


def local_round(start, cols, vals, binary, y, idx, reads, enters, folds, fold_after, with_loss, live):
    """kernel.local_round's arguments and result, computed with all workers at once (see that docstring)."""
    d, c, padded = start.shape
    m_count, k, bs = idx.shape
    nnz, cb = cols.shape[1], c * live
    first = np.ascontiguousarray(start[..., :live]).reshape(d, cb)
    reads, enters = reads[..., :live], enters[..., :live]
    # every worker's U (d, c·B) stacked, with one more row, d, where a sparse row's padding points: kept 0
    u = np.zeros((m_count, d + 1, cb), dtype=start.dtype)
    u[:, :d] = first
    flat = u.reshape(m_count * (d + 1), cb)
    # the rows of `flat` each example touches, (K, batch, M·nnz), and its values (K, batch, M, 1, nnz)
    at = ((np.arange(m_count, dtype=np.intp) * (d + 1))[:, None, None, None] + cols[idx]).transpose(1, 2, 0, 3)
    at = np.ascontiguousarray(at).reshape(k, bs, m_count * nnz)
    x = np.ascontiguousarray(vals[idx].transpose(1, 2, 0, 3))[:, :, :, None, :]
    minus_y = np.ascontiguousarray(-y[idx].transpose(1, 2, 0))[..., None]  # (K, batch, M, 1)
    loss = np.zeros((m_count, live))  # float64, as the kernel sums it
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging job's inf and NaN, as in the kernel
        for j in range(k):
            at_j, x_j, y_j, reads_j, enters_j = at[j], x[j], minus_y[j], reads[j], enters[j]
            # the batch's rows of U, all gathered (and scored) before any update: one gradient point
            rows = [np.take(flat, at_j[s], axis=0).reshape(m_count, nnz, cb) for s in range(bs)]
            for s in range(bs):
                ux = np.matmul(x_j[s], rows[s])[:, 0]  # (M, c·B): U x, a matrix product over the row's nnz values
                z = ux[:, :live] * reads_j[0]
                for q in range(1, c):
                    z += ux[:, q * live : (q + 1) * live] * reads_j[q]
                margin = np.multiply(z, y_j[s], out=z)  # ℓ = softplus(margin); in place, as below: a buffer less
                # without `with_loss` the margins themselves, summed in float64: finite exactly when every one is
                loss += np.logaddexp(0, margin) if with_loss else margin
                slope = np.exp(-margin)
                slope += 1
                np.divide(y_j[s], slope, out=slope)  # ℓ'(z) = −y σ(margin)
                push = (enters_j * slope[:, None, :]).reshape(m_count, 1, cb)
                # a row's columns are distinct: one example writes each coordinate once; with batch > 1 the
                # examples' rows may share columns, so each adds to U as the previous one left it
                if bs == 1:
                    rows[s] += push if binary else x_j[s, :, 0, :, None] * push
                    flat[at_j[s]] = rows[s].reshape(-1, cb)  # reuses the gathered rows
                else:
                    gained = push if binary else x_j[s, :, 0, :, None] * push
                    flat[at_j[s]] += np.broadcast_to(gained, rows[s].shape).reshape(-1, cb)
            u[:, d] = 0
            if fold_after[j]:
                fold = folds[j][..., :live]  # (c, c, B)
                u[:] = np.einsum("qrb,mwrb->mwqb", fold, u.reshape(m_count, d + 1, c, live)).reshape(u.shape)
    mean = first + (u[:, :d] - first).sum(0) / start.dtype.type(m_count)
    total = loss.sum(0)
    if not with_loss:
        total = np.where(np.isfinite(total), 0.0, total)
    mean = mean.reshape(d, c, live)
    return np.pad(mean, [(0, 0), (0, 0), (0, padded - live)]), np.pad(total, (0, padded - live))
