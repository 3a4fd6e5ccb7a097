"""The FedAc-protocol engine: all M workers as one computation, and the jobs of an lr grid
as one batch (a dimension over the learning rates).

It runs exactly the jobs `batch_key` accepts: the `binary_logistic` model on a `shared` split
(every worker samples with replacement from the whole training set), every worker every round,
no clipping, decay, codecs or autocast, and FedAvg / MB-SGD (server `average`) or FedAc-I/II,
vanilla FedAc / MB-AC-SGD (server and client term `fedac`), each optionally with the
`minibatch` term. For these it computes what the per-client round loop computes (same examples
from `shared_positions`, same init, same records; tests/engine/test_fedac_batched.py checks the
two agree), without Python per worker:

- K local steps: a compiled kernel (kernel.py) runs each worker's steps for all B
  jobs at once, touching only the non-zero coordinates of the step's examples (LocalSteps); a
  small cell, whose whole computation costs less than numba's start-up, runs the same steps in
  numpy with the workers side by side (numpy_round.py says which cells);
- one step per round (the minibatch methods, or K = 1): every worker starts from the broadcast
  model, and the mean of their steps is one step on the mean gradient, so the state is (B, d)
  and the gradient a matrix product over the round's M·K·batch examples.

numpy throughout, torch imported by no line of a run here (its start-up alone is ~1.2 CPU-s, most of
a small cell): the samples and w₀ that torch's seeded generators defined are drawn bit for bit
without it (benchmark/torch_streams.py), so job ids and numbers stay those of the per-client loop.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from benchmark.engine.convex import distinct_rows, softplus
from benchmark.engine.fed_data import authors_positions, shared_rows
from benchmark.fl.fedac import coefficients
from benchmark.job.config import JobConfig
from benchmark.metrics import ema_update
from benchmark.protocols.fedac.jobs import one_step_rounds, server_kind
from benchmark.protocols.fedac.numpy_round import padded_last, prefers_numpy
from benchmark.protocols.fedac.signals import HeldSignals
from benchmark.rng import Stream, derive_seed
from benchmark.torch_streams import TorchGenerator

if TYPE_CHECKING:
    from benchmark.engine.convex import BinaryArrays

ENGINE = "fedac_batched"  # recorded in the checkpoints of the jobs run here


@dataclass
class Outcome:
    """One job's share of a batch: its metric records, final evaluated model, and fate."""

    records: list[dict] = field(default_factory=list)
    final: np.ndarray | None = None  # the evaluated model (FedAc: averaged w_ag) after the last round
    diverged_round: int | None = None  # first round whose model was not finite
    error: Exception | None = None  # a setting the method refuses (FedAc-II with α ≤ 1)
    round_bytes: int = 0  # sent down (and up) per round over all workers


@dataclass
class Batch:
    """The jobs a batch runs (those whose coefficients exist) and their recursions, row by row."""

    jobs: list[JobConfig]
    outcomes: list[Outcome]
    one_step: bool
    linear: Recursion

    @classmethod
    def of(cls, jobs: list[JobConfig], outcomes: list[Outcome]) -> Batch:
        one_step = one_step_rounds(jobs[0])
        kept, rows = [], []
        for job, outcome in zip(jobs, outcomes):
            try:
                rows.append(Recursion.of_job(job, 1 if one_step else job.local.steps))
            except ValueError as err:  # FedAc-II's α ≤ 1: the job fails as in the per-client loop
                outcome.error = err
                continue
            kept.append((job, outcome))
        linear = Recursion(*(np.concatenate([getattr(r, k) for r in rows]) for k in ("T", "v", "r"))) if rows else None
        return cls([j for j, _ in kept], [o for _, o in kept], one_step, linear)


@dataclass
class Recursion:
    """A local step of every method here is linear in its state X = (w, w_ag) (2 × d per job)
    plus a rank-one data term:

        X' = T X − v (ℓ'(z) xᵀ),   z = r X x   (the score at the gradient point),

    with the weight decay λ folded into T. FedAc, gradient point p = w/β + (1 − 1/β) w_ag = r X:
    w' = (1 − 1/α) w + (1/α − γλ) p − γ g,  w_ag' = (1 − ηλ) p − η g. SGD keeps its w in the
    second row (the first stays put): T = diag(1, 1 − ηλ), v = (0, η), r = (0, 1). The last row
    is what is evaluated either way. T (B, 2, 2), v and r (B, 2) are float64, a row per job."""

    T: np.ndarray
    v: np.ndarray
    r: np.ndarray

    @classmethod
    def of_job(cls, job: JobConfig, steps: int) -> Recursion:
        lam, eta = job.local.weight_decay, job.local.lr_schedule.round_lr(0)  # no decay: batch_key admits d = 1 only
        term = job.method.term("fedac")
        if term is None:
            return cls(np.array([[[1.0, 0.0], [0.0, 1 - eta * lam]]]), np.array([[0.0, eta]]), np.array([[0.0, 1.0]]))
        p = term.params
        c = coefficients(p.variant, eta, p.mu if p.mu is not None else lam, steps, p.beta_rule)
        r = [1 / c.beta, 1 - 1 / c.beta]
        pull = 1 / c.alpha - c.gamma * lam  # FedAc-I (μ = λ): 0, w forgets the point
        T = [[1 - 1 / c.alpha + pull * r[0], pull * r[1]], [(1 - eta * lam) * r[0], (1 - eta * lam) * r[1]]]
        return cls(np.array([T]), np.array([[c.gamma, eta]]), np.array([r]))

    @property
    def size(self) -> int:
        return self.v.shape[1]

    def step(self, state: np.ndarray, data_grad: np.ndarray) -> np.ndarray:
        """state (B, c, d), data_grad (B, d) = mean ℓ'(z) x: one step of every job."""
        return self.T.astype(state.dtype) @ state - self.v.astype(state.dtype)[:, :, None] * data_grad[:, None, :]

    def schedule(self, steps: int, dtype) -> tuple[np.ndarray, np.ndarray, list[np.ndarray | None]]:
        """For K local steps on the lazy form X_k = P_k U_k (P_k c × c per job, shared by every
        worker): r P_k (how U gives the score), P_{k+1}⁻¹ v (how the data term enters U), and
        where P is folded back into U (when its condition number passes FOLD_CONDITION, so
        float32 U loses no precision); P at the end, all in `dtype`. The same every round: computed once per
        batch, in float64."""
        eye = np.broadcast_to(np.eye(self.size), self.T.shape)
        p, reads, enters, folds = eye, [], [], []
        for k in range(steps):
            reads.append((self.r[:, None, :] @ p)[:, 0])
            p = self.T @ p
            enters.append(np.linalg.solve(p, self.v[..., None])[..., 0])
            fold = k + 1 == steps or float(np.linalg.cond(p).max()) > FOLD_CONDITION
            folds.append(p.astype(dtype) if fold else None)
            if fold:
                p = eye
        return np.stack(reads).astype(dtype), np.stack(enters).astype(dtype), folds


FOLD_CONDITION = 50.0


@dataclass
class SparseRows:
    """x as padded (column, value) lists: a9a has at most 14 non-zeros in 123 features, so a
    worker's step reads and writes 14 coordinates. Padding points at an extra, unused column d."""

    cols: np.ndarray  # (n, nnz), the smallest unsigned type that holds d (a9a: uint8, 14 bytes a row)
    vals: np.ndarray  # (n, nnz) float32
    width: int  # d + 1: the columns and the padding one
    binary: bool  # every non-zero is 1 (a9a): x's values need no multiplication

    @classmethod
    def of(cls, x: np.ndarray) -> SparseRows:
        n, d = x.shape
        present = x != 0
        counts = np.count_nonzero(present, axis=1)
        nnz = max(int(counts.max()), 1)
        flat = np.flatnonzero(present)  # row by row, columns ascending (one index array: 17 ms, not 25)
        rows, columns = np.divmod(flat, d)
        slot = np.arange(len(rows)) - (np.cumsum(counts) - counts)[rows]  # place within its row
        # the kernel reads a random row's columns every step: as uint8 all of a9a's stay in L2 (456 kB, as int64
        # 3.6 MB): its rounds at M = 1,024 are a third faster (benchmarks/README.md)
        cols = np.full((n, nnz), d, dtype=np.min_scalar_type(d))
        vals = np.zeros((n, nnz), dtype=x.dtype)
        cols[rows, slot], vals[rows, slot] = columns, x.reshape(-1)[flat]
        return cls(cols, vals, d + 1, bool((vals[cols < d] == 1).all()))

    @classmethod
    def cached(cls, x: np.ndarray, job: JobConfig) -> SparseRows:
        """`of(x)` for x the job's training data as loaded, found once per data and machine and read back
        (a9a: 16-24 ms to build, ~1 to read), keyed by the data's fingerprint (its tensors' checksum)."""
        from benchmark.data.cache import cache_key, cached_arrays
        from benchmark.engine.sources import data_fingerprint

        def build() -> dict[str, np.ndarray]:
            rows = cls.of(x)
            return {"cols": rows.cols, "vals": rows.vals, "binary": np.array(rows.binary)}

        held = cached_arrays("sparse_rows", cache_key(data_fingerprint(job), x.shape, SPARSE_ROWS_LAYOUT), build)
        return cls(held["cols"], held["vals"], x.shape[1] + 1, bool(held["binary"]))


SPARSE_ROWS_LAYOUT = 1  # bump when SparseRows.of changes, so older cached copies are not read


class PerDataset:
    """What every batch on one dataset shares (its sparse rows, objectives), built once per
    process; one dataset is kept at a time (a suite runs on one, and others need not pile up)."""

    def __init__(self):
        self.fingerprint: str | None = None
        self.values: dict = {}

    def get(self, job: JobConfig, key: tuple, build):
        from benchmark.engine.sources import data_fingerprint

        fingerprint = data_fingerprint(job)
        if fingerprint != self.fingerprint:
            self.fingerprint, self.values = fingerprint, {}
        if key not in self.values:
            self.values[key] = build()
        return self.values[key]


PER_DATASET = PerDataset()


def _logistic_parts(
    z: np.ndarray, y: np.ndarray, with_loss: bool = True, weight: np.ndarray | float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """(loss log(1 + e^{−yz}), its derivative in z times `weight`) for scores z and labels y = ±1. Without
    `with_loss`, min(yz, 0) for the loss, no logarithms: where the loss can overflow (yz < −20) it is −yz
    itself, so its weighted sum is not finite where the loss's is not (up to rounding at the float's very
    maximum). The derivative is computed in one buffer, in place: at M = 1,024 it is (n, B), 1.7 MB."""
    margin = y * z
    share = _sigma_of_minus(margin)
    share *= -y * weight
    return softplus(-margin) if with_loss else -np.minimum(margin, 0), share


def _sigma_of_minus(v: np.ndarray) -> np.ndarray:
    """σ(−v) = 1 / (1 + e^v) in one new buffer, worked in place; an overflowing e^v gives 0, as torch's."""
    out = np.exp(v)
    out += 1
    return np.reciprocal(out, out=out)


def run_batch(
    jobs: list[JobConfig],
    x: np.ndarray,
    y01: np.ndarray,
    test_x: np.ndarray,
    test_y01: np.ndarray,
    objective: BinaryArrays | None,
    row_order: np.ndarray | None = None,
) -> list[Outcome]:
    """Run jobs (equal `batch_key`s) together; one Outcome per job, in order. The data as numpy
    arrays (or CPU tensors, read as arrays). `row_order`: the training rows stored in this order and
    the workers taken in reverse (the same examples, every sum over them in another order: the replay
    record's rounding probe, released.py)."""
    first = jobs[0]
    outcomes = [Outcome() for _ in jobs]
    batch = Batch.of(jobs, outcomes)
    live = batch.outcomes
    if not batch.jobs:
        return outcomes
    # the authors' sample stream runs in float64, as their numpy code does: their runs to 1e-6, not float32's 1e-3
    authors = first.dataset.split.samples == "authors_numpy"
    dtype = np.float64 if authors else np.float32
    x, test_x = np.asarray(x), np.asarray(test_x)
    # copy=False: a9a is read as float32 already, and a copy of its 16 MB costs ~10 ms each
    rows_x = x.reshape(len(x), -1).astype(np.float32, copy=False)  # sparse rows: float32 values, any state
    y01 = np.asarray(y01)
    if row_order is not None:
        row_order = np.asarray(row_order)
        rows_x, y01, where = rows_x[row_order], y01[row_order], np.argsort(row_order)
    test_x = test_x.reshape(len(test_x), -1).astype(dtype, copy=False)
    x = rows_x.astype(dtype, copy=False)
    y, test_y = 2.0 * y01.astype(dtype) - 1.0, 2.0 * np.asarray(test_y01).astype(dtype) - 1.0
    n, d = x.shape
    b_count, m, k, bs = len(batch.jobs), first.num_clients, first.local.steps, first.local.batch_size
    linear = batch.linear
    state = np.broadcast_to(initial_model(first, d, dtype), (b_count, linear.size, d)).copy()  # (B, c, d)
    # (θ, θ_ag) down and (Δ, Δ_ag) up per worker for FedAc, θ and Δ for SGD
    round_bytes = [
        m * (2 if server_kind(j.method) == "fedac" else 1) * d * np.dtype(dtype).itemsize for j in batch.jobs
    ]
    if authors:  # their arithmetic in their order (authors_steps.py)
        from benchmark.protocols.fedac.authors_steps import AuthorsSteps

        local = AuthorsSteps(batch.jobs, x, y, 1 if batch.one_step else k)
        if not batch.one_step:
            state = local.broadcast(state, m)  # their pool starts from the mean of M copies of w₀
    elif batch.one_step:
        local = None
        key = ("distinct rows", _digest(row_order))

        def distinct_rows() -> DistinctRows:  # built once per dataset, where a round first draws most rows
            return PER_DATASET.get(first, key, lambda: DistinctRows.of(x, y))
    else:

        def sparse_rows() -> SparseRows:  # x as stored: cached on disk under its data's fingerprint
            return SparseRows.of(rows_x) if row_order is not None else SparseRows.cached(rows_x, first)

        train_rows = PER_DATASET.get(first, ("train rows", _digest(row_order)), sparse_rows)
        local = LocalSteps(linear, train_rows, y, m, k, in_numpy=prefers_numpy(first))
    ema: list[float | None] = [None] * b_count
    # the per-client loop's divergence checks: training loss and θ every round, test loss when evaluated
    theta_row = np.array([0 if server_kind(j.method) == "fedac" else 1 for j in batch.jobs])
    finite = np.ones(b_count, dtype=bool)

    def check(done: int, ok: np.ndarray) -> None:
        nonlocal finite
        for i in np.flatnonzero(finite & ~ok).tolist():
            live[i].diverged_round = done
        finite = finite & ok  # diverged jobs go on (NaN); their replay stops before this round

    # a diverging job overflows to inf and NaN, found by `check` as the per-client loop finds it: no warnings
    with HeldSignals() as held, np.errstate(over="ignore", invalid="ignore"):
        for rnd in range(first.rounds):
            shape = (rnd, m, k, bs, n)
            idx = authors_positions(first.seed, d, *shape) if authors else shared_rows(first.seed, *shape)
            if row_order is not None:
                idx = np.flip(where[idx], 0)
            done = rnd + 1
            if local is None:
                state, loss = _one_step(linear, state, x, y, idx.reshape(-1), first.evaluates(done), distinct_rows)
            elif batch.one_step:
                state, loss = local.one_step(state, idx)
            else:
                state, loss = local.round(state, idx, with_loss=first.evaluates(done))
            held.deliver()  # Ctrl-C / SIGTERM during the round's kernel call stops here
            check(done, np.isfinite(loss) & np.isfinite(state[np.arange(b_count), theta_row]).all(1))
            if not first.evaluates(done):
                continue
            evaluated = state[:, -1]  # w, or FedAc's w_ag
            # dense products: a BLAS call takes milliseconds here, and a compiled sparse one costs its
            # start-up (numba's, about 1.5 s) in the methods that otherwise never call the kernel
            scores = test_x @ evaluated.T  # (test, B)
            test_loss = softplus(-test_y[:, None] * scores).mean(0)
            check(done, np.isfinite(test_loss))
            acc = 100.0 * ((scores > 0) == (test_y[:, None] > 0)).astype(dtype).mean(0)
            subopt = objective.suboptimalities(evaluated) if objective else None  # F on all training data, float64
            for i in range(b_count):
                ema[i] = ema_update(ema[i], float(acc[i]))
                rec = {
                    "round": done,
                    "test_acc": float(acc[i]),
                    "test_loss": float(test_loss[i]),
                    "train_loss": float(loss[i]),
                    "ema_acc": ema[i],
                    "bytes_down": done * round_bytes[i],
                    "bytes_up": done * round_bytes[i],
                }
                if first.suboptimality:
                    rec["subopt"] = float(subopt[i])
                live[i].records.append(rec)
    for i, outcome in enumerate(live):
        outcome.final, outcome.round_bytes = state[i, -1].copy(), round_bytes[i]
    return outcomes


def _digest(order: np.ndarray | None) -> str | None:
    return None if order is None else hashlib.sha256(np.ascontiguousarray(order).tobytes()).hexdigest()


def _one_step(linear: Recursion, state, x, y, rows, with_loss: bool = True, distinct=None):
    """All workers from the broadcast model, one step each, averaged: one step on the mean
    gradient over the round's M·K·batch examples (the steps are linear in the gradient). Every
    example is seen at the same point, so each distinct row is computed once, weighted by how
    often it was drawn: at most n rows, however large M·K. Without `with_loss`, a stand-in for the
    mean loss that is finite where it is (_logistic_parts), as LocalSteps.round's. `distinct`: a
    callable giving x's DistinctRows (built from x and y when None), used when most rows are drawn."""
    point = (linear.r.astype(state.dtype)[:, None, :] @ state)[:, 0]  # (B, d)
    if len(rows) < GATHER_BELOW * len(x):  # fewer draws than that, fewer distinct rows: sorting them costs less
        drawn, counts = np.unique(rows, return_counts=True)  # than counting all n rows (M = 64: 0.05 ms, not 0.2)
    else:
        counts = np.bincount(rows, minlength=len(x))
        drawn = np.flatnonzero(counts)
        if len(drawn) >= GATHER_BELOW * len(x):
            rows_of = distinct() if distinct else DistinctRows.of(x, y)
            return rows_of.step(linear, state, point, counts, with_loss, len(rows))
        counts = counts[drawn]
    x, y = np.take(x, drawn, axis=0), y[drawn]  # take: a third faster than x[drawn]
    weight = counts.astype(state.dtype)
    part_loss, share = _logistic_parts(x @ point.T, y[:, None], with_loss, weight=weight[:, None])  # (rows, B)
    return linear.step(state, (share.T @ x) / len(rows)), (weight @ part_loss) / len(rows)


# Below this share of the training rows drawn in a round, they are copied out and computed alone; above
# it every distinct row is computed at its draws' weight, which costs less than the copy (a9a, 13 jobs: the
# copy 68 ns a row, a row's products 270 ns; M = 1,024 one-step rounds draw 86 % of the rows)
GATHER_BELOW = 0.8


@dataclass
class DistinctRows:
    """x's distinct rows (a9a's features are categorical: 24,947 distinct rows of 32,561), each row's index
    among them, and whether its label is +1: a one-step round that draws most rows computes each
    distinct row once, with the weights of its draws labelled +1 and −1 (6.3 ms a round at M = 1,024, 4.9)."""

    x: np.ndarray  # (u, d)
    of_row: np.ndarray  # (n,) index into x
    positive: np.ndarray  # (n,) float, 1 where y = +1

    @classmethod
    def of(cls, x: np.ndarray, y: np.ndarray) -> DistinctRows:
        first, of_row = distinct_rows(x)
        return cls(x[first], of_row, (np.asarray(y) > 0).astype(np.float64))

    def step(self, linear: Recursion, state, point, counts, with_loss: bool, draws: int):
        """_one_step's result from the round's draw counts per training row, with the scores of distinct rows."""
        u = len(self.x)
        total = np.bincount(self.of_row, weights=counts, minlength=u).astype(state.dtype)[:, None]
        positive = np.bincount(self.of_row, weights=counts * self.positive, minlength=u).astype(state.dtype)[:, None]
        negative = total - positive
        z = self.x @ point.T  # (u, B)
        share = _sigma_of_minus(z)
        share *= -total
        share += negative  # ℓ'(z) weighted: −σ(−z) for the rows labelled +1, σ(z) = 1 − σ(−z) for those −1
        if with_loss:  # ℓ = softplus(−yz)
            loss = positive[:, 0] @ softplus(-z) + negative[:, 0] @ softplus(z)
        else:  # the stand-in −min(yz, 0) of _logistic_parts
            loss = positive[:, 0] @ np.maximum(-z, 0) + negative[:, 0] @ np.maximum(z, 0)
        return linear.step(state, (share.T @ self.x) / draws), loss / draws


class LocalSteps:
    """K local steps of M workers, each step touching only its examples' non-zero coordinates.

    Every worker's state is X_k = P_k U_k with P_k (c × c per job) the product of the steps'
    linear parts, the same for all workers, so a step updates U only where x is non-zero
    (Recursion.schedule). The average over workers is P · mean(U). The steps themselves run in
    the compiled kernel (kernel.py), one worker at a time, or `in_numpy` with all workers at once
    (numpy_round.py: the same arguments and result, without numba's start-up)."""

    def __init__(self, linear: Recursion, sparse: SparseRows, y: np.ndarray, workers: int, steps: int, in_numpy: bool):
        self.sparse, self.y, self.in_numpy = sparse, np.asarray(y), in_numpy
        reads, enters, folds = linear.schedule(steps, self.y.dtype)
        self.jobs = reads.shape[1]
        # idle jobs (reads, enters and U zero) pad the batch: see pad_jobs
        self.reads = pad_jobs(reads.transpose(0, 2, 1))  # (K, c, B + pad)
        self.enters = pad_jobs(enters.transpose(0, 2, 1))  # scaled by −1/batch per round
        self.last_fold = folds[-1]
        c, padded = self.reads.shape[1:]
        self.folds = np.zeros((steps, c, c, padded), dtype=self.y.dtype)
        self.fold_after = np.zeros(steps, dtype=bool)
        for j, fold in enumerate(folds[:-1]):  # the last one is applied to the mean
            if fold is not None:
                self.folds[j, ..., : self.jobs], self.fold_after[j] = fold.transpose(1, 2, 0), True
        # the rows of X that some step reads or moves or some fold mixes: the others (SGD's first row, which
        # keeps w₀) stay as they start in every worker's U, so the steps run without them (FedAvg: half the data
        # a step); a finite job's numbers are the same bits (its scores lose terms r·U = 0 exactly)
        self.moving = [q for q in range(c) if not self._still(q)]
        if len(self.moving) < c:
            kept = self.moving
            self.reads, self.enters = (np.ascontiguousarray(t[:, kept]) for t in (self.reads, self.enters))
            self.folds = np.ascontiguousarray(self.folds[:, kept][:, :, kept])

    def _still(self, q: int) -> bool:
        """Whether row q of X is never read or moved by a step, and every fold before the last keeps it as it is."""
        live = slice(0, self.jobs)
        if self.reads[:, q, live].any() or self.enters[:, q, live].any():
            return False
        folds = self.folds[self.fold_after][..., live]  # (folds, c, c, B)
        unit = np.eye(self.reads.shape[1], dtype=folds.dtype)[q][:, None]  # e_q: its row and column in a fold
        return bool((folds[:, q] == unit).all() and (folds[:, :, q] == unit).all())

    def round(self, state: np.ndarray, idx: np.ndarray, with_loss: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """The averaged state after one round from the broadcast `state` (B, c, d), and the mean
        training loss over the steps; without `with_loss`, a stand-in for it that is finite
        exactly when the loss is (0, or the non-finite value), and costs no logarithms."""
        if self.in_numpy:
            from benchmark.protocols.fedac.numpy_round import local_round
        else:
            from benchmark.protocols.fedac.kernel import local_round  # numba: only where local steps are taken

        m, k, bs = idx.shape
        enters = self.enters * (-1.0 / bs)  # U ← U − P⁻¹v · mean over the batch of ℓ'(z) x
        start = pad_jobs(np.asarray(state).transpose(2, 1, 0))  # (d, c, B + pad)
        moved = start if len(self.moving) == start.shape[1] else np.ascontiguousarray(start[:, self.moving])
        mean_moved, loss = local_round(
            moved,
            self.sparse.cols,
            self.sparse.vals,
            self.sparse.binary,
            self.y,
            np.ascontiguousarray(idx),
            self.reads,
            enters,
            self.folds,
            self.fold_after,
            with_loss,
            self.jobs,
        )
        mean_u = mean_moved
        if moved is not start:
            mean_u = start.copy()  # the still rows: as they started
            mean_u[:, self.moving] = mean_moved
        new = np.einsum("bcq,dqb->bcd", self.last_fold, mean_u[..., : self.jobs])
        return new, (loss[: self.jobs] / (m * k * bs)).astype(new.dtype)


def pad_jobs(t: np.ndarray) -> np.ndarray:
    """t (..., B) with idle jobs (zeros) up to a multiple of LANES, contiguous: the kernels' vector
    loops over jobs then have no scalar remainder, which slowed them markedly (benchmarks/README.md)."""
    return padded_last(t, t.shape[-1] + -t.shape[-1] % LANES)


LANES = 8  # float32 values in one vector register (AVX2)


def initial_model(job: JobConfig, d: int, dtype=np.float32) -> np.ndarray:
    """θ₀ (d,) of the job's binary_logistic model, as the per-client path builds it (models/registry.py:
    the seeded init of the model), in `dtype` (float64: normal_numpy's w0 as numpy draws it, not
    rounded to float32). torch's draws are reproduced (torch_streams.py) where they are float32 and
    of 16 values or more; elsewhere the model is built with torch, as the per-client path does."""
    init = job.model.init
    if init == "zeros":
        return np.zeros(d, dtype)
    if init == "normal_numpy":  # the FedAc authors' `np.random.seed(seed); np.random.randn(d)`
        return np.random.RandomState(job.seed).randn(d).astype(dtype)
    if dtype == np.float32 and d >= 16:
        if init == "normal":  # torch.randn((1, d)) on the job's INIT stream
            return TorchGenerator(derive_seed(job.seed, Stream.INIT)).randn((d,))
        # "default": nn.Linear(d, 1, bias=False)'s kaiming_uniform_(a=√5) after torch.manual_seed(seed)
        bound = math.sqrt(3.0) * math.sqrt(2.0 / (1 + 5)) / math.sqrt(d)
        return TorchGenerator(job.seed).uniform((d,), -bound, bound)
    return _initial_model_by_torch(job, dtype)


def _initial_model_by_torch(job: JobConfig, dtype) -> np.ndarray:
    import torch

    from benchmark.engine.setup import load_source
    from benchmark.fl.flat import flat_params
    from benchmark.models.registry import build_model

    src = load_source(job)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64 if dtype == np.float64 else torch.float32)  # draws stored as drawn
    try:
        model = build_model(
            job.model.name, src.input_shape, src.num_classes, job.model.params, job.model.init, job.seed
        )
    finally:
        torch.set_default_dtype(previous)
    return flat_params(model).detach().numpy()
