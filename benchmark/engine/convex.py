"""The ℓ2-regularised logistic objective of a convex job, its optimum F*, and F(w) − F*.

F(w) = (1/n) Σ_i CE(W x_i + b, y_i) + (μ/2)‖w‖², w = (fc.weight, fc.bias) of the `logistic`
model, n = every training example held by the federation's clients, μ = local.weight_decay.
For the `binary_logistic` model (FedAc's protocol): F(w) = (1/n) Σ log(1 + exp(−y_i x_iᵀw)) +
(λ/2)‖w‖², y = ±1, no bias (`BinaryLogistic`).
Every coordinate is regularised, the bias included, because the engine's coupled weight decay
adds μ·w to the whole flat vector; F is then exactly the objective the local steps descend.
F* comes from a damped Newton solve in float64 to ‖∇F‖ < 1e-10, cached on disk per
(checksum of the data, number of classes, μ).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from benchmark.data.cache import cache_key, cached_arrays
from benchmark.engine.fed_data import FederatedData
from benchmark.errors import UserError
from benchmark.fl.flat import ParamSpec
from benchmark.lazy import torch  # BinaryArrays, the FedAc engine's objective, runs without it

LOGISTIC_PARAMS = ("fc.weight", "fc.bias")
BINARY_PARAMS = ("fc.weight",)
GRAD_TOL = 1e-10
MAX_NEWTON_STEPS = 100


@dataclass
class RegularisedLogistic:
    x: torch.Tensor  # (n, d + 1) float64, last column 1 (the bias)
    y: torch.Tensor  # (n,) class indices
    num_classes: int
    mu: float
    digest: str  # checksum of the float32 data: the cache key of F*

    @classmethod
    def of(cls, x: torch.Tensor, y: torch.Tensor, num_classes: int, mu: float) -> RegularisedLogistic:
        check_strongly_convex(mu)
        x = x.detach().cpu().flatten(1)
        digest = data_digest(x.float().numpy(), y.cpu().numpy())
        ones = torch.ones(len(x), 1, dtype=torch.float64)
        return cls(torch.cat([x.double(), ones], 1), y.cpu().long(), num_classes, mu, digest)

    @classmethod
    def of_federation(cls, data: FederatedData, spec: ParamSpec, mu: float) -> RegularisedLogistic:
        kind = {LOGISTIC_PARAMS: cls, BINARY_PARAMS: BinaryLogistic}.get(spec.names)
        if kind is None:
            shown = ", ".join(spec.names[:4]) + (" ..." if len(spec.names) > 4 else "")
            raise UserError(
                f"suboptimality: true needs the `logistic` or `binary_logistic` model (parameters "
                f"{', '.join(LOGISTIC_PARAMS)}, or {BINARY_PARAMS[0]} alone); this model has {shown}"
            )
        rows = data.training_rows().to(data.src.train_x.device)
        return kind.of(data.src.train_x[rows], data.src.train_y[rows], data.src.num_classes, mu)

    def start(self) -> torch.Tensor:
        """Where the Newton solve starts (Θ = 0)."""
        return torch.zeros(self.num_classes, self.x.shape[1], dtype=torch.float64)

    # flat w = [W (C×d) row-major, b (C)]  <->  Θ = [W | b] (C × (d+1))
    def theta(self, w: torch.Tensor) -> torch.Tensor:
        c, d = self.num_classes, self.x.shape[1] - 1
        w = w.detach().cpu().double()
        return torch.cat([w[: c * d].view(c, d), w[c * d :].view(c, 1)], 1)

    def flat(self, theta: torch.Tensor) -> torch.Tensor:
        return torch.cat([theta[:, :-1].reshape(-1), theta[:, -1]])

    def value_and_grad(self, theta: torch.Tensor) -> tuple[float, torch.Tensor, torch.Tensor]:
        """(F(Θ), ∇F(Θ), softmax probabilities)."""
        z = self.x @ theta.T
        logp = torch.log_softmax(z, 1)
        n = len(self.y)
        p = logp.exp()
        value = -logp.gather(1, self.y[:, None]).mean() + 0.5 * self.mu * (theta**2).sum()
        err = p.clone()
        err[torch.arange(n), self.y] -= 1
        return float(value), err.T @ self.x / n + self.mu * theta, p

    def value(self, w: torch.Tensor) -> float:
        return self.value_and_grad(self.theta(w))[0]

    def hessian(self, p: torch.Tensor) -> torch.Tensor:
        """(1/n) Σ_i (diag p_i − p_i p_iᵀ) ⊗ x_i x_iᵀ + μ I, rows ordered like Θ.reshape(-1)."""
        c, dim, n = self.num_classes, self.x.shape[1], len(self.y)
        h = torch.empty(c, dim, c, dim, dtype=torch.float64)
        for a in range(c):
            for b in range(a, c):
                weight = p[:, a] * ((1.0 if a == b else 0.0) - p[:, b])
                block = (self.x * weight[:, None]).T @ self.x / n
                h[a, :, b, :] = block
                h[b, :, a, :] = block.T
        h = h.reshape(c * dim, c * dim)
        return h + self.mu * torch.eye(c * dim, dtype=torch.float64)

    def solve(self) -> tuple[torch.Tensor, float]:
        """(Θ*, F*) by Newton's method with Armijo backtracking, from Θ = 0."""
        theta = self.start()
        value, grad, p = self.value_and_grad(theta)
        for _ in range(MAX_NEWTON_STEPS):
            if grad.norm() < GRAD_TOL:
                return theta, value
            step = -torch.linalg.solve(self.hessian(p), grad.reshape(-1)).view_as(theta)
            slope, t = float((grad * step).sum()), 1.0
            while True:  # F is strongly convex and step a descent direction: this ends
                candidate = theta + t * step
                new_value, new_grad, new_p = self.value_and_grad(candidate)
                if new_value <= value + 1e-4 * t * slope or t < 1e-12:
                    break
                t *= 0.5
            theta, value, grad, p = candidate, new_value, new_grad, new_p
        raise RuntimeError(f"Newton solve for F* stopped at ‖∇F‖ = {float(grad.norm()):.3g} > {GRAD_TOL:g}")

    @cached_property
    def optimum(self) -> tuple[torch.Tensor, float]:
        """(flat w*, F*), solved once per (data, classes, μ) and cached on disk."""
        a = cached_optimum(type(self).__name__, self.digest, self.num_classes, self.mu, self.solved)
        return torch.from_numpy(a["w"]), float(a["value"])

    def solved(self) -> dict[str, np.ndarray]:
        """`solve()` as the F* cache stores it: flat w* and F*."""
        theta, value = self.solve()
        return {"w": self.flat(theta).numpy(), "value": np.array(value, dtype=np.float64)}

    def suboptimality(self, w: torch.Tensor) -> float:
        return self.value(w) - self.optimum[1]


class BinaryLogistic(RegularisedLogistic):
    """F(w) = mean log(1 + exp(−y xᵀw)) + (λ/2)‖w‖², y = ±1 (class 1 is +1), no bias: the
    objective of the `binary_logistic` model, whose flat vector is w itself."""

    @classmethod
    def of(cls, x: torch.Tensor, y: torch.Tensor, num_classes: int, mu: float) -> BinaryLogistic:
        full = super().of(x, y, num_classes, mu)
        full.x = full.x[:, :-1]  # no bias column
        return full

    def start(self) -> torch.Tensor:
        return torch.zeros(self.x.shape[1], dtype=torch.float64)

    def theta(self, w: torch.Tensor) -> torch.Tensor:
        return w.detach().cpu().double().reshape(-1)

    def flat(self, theta: torch.Tensor) -> torch.Tensor:
        return theta

    def value_and_grad(self, theta: torch.Tensor) -> tuple[float, torch.Tensor, torch.Tensor]:
        """(F(w), ∇F(w), σ(y xᵀw)) with y = ±1."""
        sign = 2.0 * self.y.double() - 1.0
        margin = sign * (self.x @ theta)
        value = torch.nn.functional.softplus(-margin).mean() + 0.5 * self.mu * (theta**2).sum()
        p = torch.sigmoid(margin)
        grad = -(self.x.T @ (sign * (1 - p))) / len(self.y) + self.mu * theta
        return float(value), grad, p

    def suboptimalities(self, ws: torch.Tensor) -> torch.Tensor:
        """F(w) − F* for every row of ws (B, d) at once (float64)."""
        ws = ws.detach().cpu().double()
        sign = 2.0 * self.y.double() - 1.0
        scores = self.x @ ws.T
        losses = torch.nn.functional.softplus(-sign[:, None] * scores).mean(0)
        return losses + 0.5 * self.mu * (ws**2).sum(1) - self.optimum[1]

    def hessian(self, p: torch.Tensor) -> torch.Tensor:
        weight = p * (1 - p) / len(self.y)
        return (self.x * weight[:, None]).T @ self.x + self.mu * torch.eye(self.x.shape[1], dtype=torch.float64)


def check_strongly_convex(mu: float) -> None:
    if mu <= 0:
        raise UserError("suboptimality needs a strongly convex objective: set local.weight_decay > 0")


def data_digest(x32: np.ndarray, y: np.ndarray) -> str:
    """Checksum of the float32 features and the labels: the F* cache's key."""
    h = hashlib.sha256(np.ascontiguousarray(x32))  # the arrays' own buffers, not copies (a9a: 16 MB, 16 ms)
    h.update(np.ascontiguousarray(y))
    return h.hexdigest()


def cached_optimum(kind: str, digest: str, num_classes: int, mu: float, solve) -> dict[str, np.ndarray]:
    """{"w", "value"} of the objective's optimum, solved by `solve()` once per (data, classes, μ) and cached
    on disk as arrays: read back without torch (BinaryArrays)."""
    return cached_arrays("fstar", cache_key(kind, digest, num_classes, mu, GRAD_TOL), solve)


def softplus(z: np.ndarray) -> np.ndarray:
    """log(1 + e^z) as torch's softplus computes it: z itself above 20."""
    return np.where(z > 20, z, np.log1p(np.exp(np.minimum(z, 20))))


def distinct_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the index of each distinct row of x (n, d), each row's index among them); rows compared as bytes:
    a 0/1 matrix's rows packed to bits first (a9a: 16 bytes a row, 24,947 distinct of 32,561, 11 ms)."""
    binary = bool(((x == 0) | (x == 1)).all())
    key = np.ascontiguousarray(np.packbits(x != 0, axis=1) if binary else x)
    rows = key.view(np.dtype((np.void, key.shape[1] * key.itemsize))).reshape(-1)
    _, first, of_row = np.unique(rows, return_index=True, return_inverse=True)
    return first, of_row.reshape(-1)


@dataclass
class BinaryArrays:
    """BinaryLogistic's F(w) − F* in numpy (the FedAc engine's, which imports no torch): F* read from
    the same cache, solved by BinaryLogistic (with torch) where it is missing.

    F's data term is summed over x's distinct rows, each with the counts of its rows labelled +1 and −1 and
    one logarithm whatever its labels: log(1 + e^{∓z}) = log1p(e^{−|z|}) + max(∓z, 0), every term ≥ 0, so the
    sums cancel nothing (a9a: 24,947 rows scored for 32,561; 13 models 12 -> 7 ms)."""

    x_t: np.ndarray  # (d, u) float64: the distinct rows, as columns
    count: np.ndarray  # (u,) float64: how many training rows each stands for
    positives: np.ndarray  # (u,) float64: how many of them are labelled +1
    mu: float
    f_star: float

    @classmethod
    def of(cls, x: np.ndarray, y: np.ndarray, mu: float, data_key: str | None = None) -> BinaryArrays:
        """`data_key`: a checksum of x and y the caller already holds (the loaded data's fingerprint,
        engine/sources.py), for F*'s cache key in place of hashing them again (16-21 ms on a9a)."""
        check_strongly_convex(mu)
        x = x.reshape(len(x), -1)

        def solve() -> dict[str, np.ndarray]:
            return BinaryLogistic.of(torch.from_numpy(x), torch.from_numpy(y), 2, mu).solved()

        digest = f"data {data_key}" if data_key else data_digest(x.astype(np.float32, copy=False), y)
        optimum = cached_optimum(BinaryLogistic.__name__, digest, 2, mu, solve)

        def rows() -> dict[str, np.ndarray]:
            first, of_row = distinct_rows(x)
            count = np.bincount(of_row, minlength=len(first)).astype(np.float64)
            positives = np.bincount(of_row, weights=(np.asarray(y) > 0).astype(np.float64), minlength=len(first))
            return {"first": first, "count": count, "positives": positives}

        # found once per data, as F* is (11 ms on a9a; read back in under 1)
        held = cached_arrays("distinct_rows", cache_key(digest), rows)
        x_t = np.ascontiguousarray(x[held["first"]].T, dtype=np.float64)
        return cls(x_t, held["count"], held["positives"], mu, float(optimum["value"]))

    def suboptimalities(self, ws: np.ndarray) -> np.ndarray:
        """F(w) − F* for every row of ws (B, d) at once (float64)."""
        ws = ws.astype(np.float64)
        z = ws @ self.x_t  # (B, u)
        lost = np.abs(z)  # log1p(e^{−|z|}), in place
        np.negative(lost, out=lost)
        np.exp(lost, out=lost)
        np.log1p(lost, out=lost)
        above = np.maximum(z, 0)  # max(z, 0): the loss of the rows labelled −1 beyond the logarithm
        below = np.maximum(np.negative(z, out=z), 0, out=z)  # max(−z, 0): those labelled +1
        negatives = self.count - self.positives
        n = self.count.sum()
        data = [self.count @ a + self.positives @ b + negatives @ c for a, b, c in zip(lost, below, above)]
        return np.array(data) / n + 0.5 * self.mu * (ws**2).sum(1) - self.f_star
