"""Tiny federations for the method tests, and an independent reference for local training.

The reference re-writes every formula with plain torch ops on explicit weight matrices (the
logistic model: logits = X Wᵀ + b; a two-stage tanh MLP for feature/stage based terms); it
never calls benchmark code, so the tests compare the implementation with the formulas.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from benchmark.data.source import SourceData
from benchmark.engine.fed_data import FederatedData, default_preprocess
from benchmark.engine.simulation import Simulation
from benchmark.fl.method import resolve_method
from benchmark.job.config import JobConfig, JobData
from benchmark.job.settings import LocalTraining, ModelConfig, Participation
from benchmark.models.logistic import Logistic

DIM, CLASSES = 3, 4
LR, WD = 0.1, 1e-3


def toy_data(sizes: list[int], seed: int = 0, dim: int = DIM, classes: int = CLASSES):
    """(X, y, client index lists): client k holds `sizes[k]` examples."""
    g = torch.Generator().manual_seed(seed)
    n = sum(sizes)
    x = torch.randn(n, dim, generator=g)
    y = torch.randint(0, classes, (n,), generator=g)
    starts = torch.tensor([0, *sizes]).cumsum(0).tolist()
    return x, y, [list(range(starts[i], starts[i + 1])) for i in range(len(sizes))]


def make_sim(
    method,
    sizes=(5, 4, 6),
    *,
    steps: int = 2,
    rate: float = 1.0,
    seed: int = 0,
    model: nn.Module | None = None,
    init: torch.Tensor | None = None,
    pool: dict | None = None,
    local: dict | None = None,
    execution: str = "sequential",
) -> Simulation:
    x, y, clients = toy_data(list(sizes))
    src = SourceData(x, y, x.clone(), y.clone(), CLASSES, "vector")
    data = FederatedData(src, [torch.tensor(c) for c in clients], default_preprocess(src))
    job = JobConfig(
        dataset=JobData(name="synthetic"),
        method=resolve_method(method, "methods[0]"),
        seed=seed,
        rounds=5,
        eval_every=1,
        num_clients=len(sizes),
        participation=Participation(mode="fixed", rate=rate, pool=pool),
        local=LocalTraining(
            **{"steps": steps, "batch_size": 1000, "lr": LR, "weight_decay": WD, "clip_norm": None, **(local or {})}
        ),
        model=ModelConfig(),
        metrics=[],
        precision="fp32",
        checkpoint_every=0,
        execution=execution,
    )
    model = model or Logistic((DIM,), CLASSES)
    if init is not None:
        with torch.no_grad():
            torch.nn.utils.vector_to_parameters(init.clone(), model.parameters())
    return Simulation(job, data, model)


def client_xy(sim: Simulation, cid: int):
    idx = sim.setup.data.clients[cid]
    return sim.setup.data.src.train_x[idx], sim.setup.data.src.train_y[idx]


# ---- reference models written out by hand ---------------------------------------------------
def logistic_logits(w: torch.Tensor, x: torch.Tensor, dim: int = DIM, classes: int = CLASSES) -> torch.Tensor:
    W, b = w[: dim * classes].view(classes, dim), w[dim * classes :]
    return x @ W.T + b


class TwoStageMLP(nn.Module):
    """stage 0: tanh(A x + a); stage 1: tanh(B h + c); head: C h + e. Implements the stage protocol."""

    num_stages = 2

    def __init__(self, dim: int = DIM, hidden: int = 5, classes: int = CLASSES):
        super().__init__()
        self.s0, self.s1, self.head = nn.Linear(dim, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, classes)

    def forward(self, x, features: bool = False, stages: bool = False, start: int = 0):
        h, outs = x, []
        for k, layer in enumerate((self.s0, self.s1)):
            if k >= start:
                h = torch.tanh(layer(h))
                outs.append(h)
        logits = self.head(h)
        if stages:
            return logits, outs
        return (logits, h) if features else logits


def mlp_parts(w: torch.Tensor, dim: int = DIM, hidden: int = 5, classes: int = CLASSES):
    sizes = [hidden * dim, hidden, hidden * hidden, hidden, classes * hidden, classes]
    A, a, B, c, C, e = torch.split(w, sizes)
    return A.view(hidden, dim), a, B.view(hidden, hidden), c, C.view(classes, hidden), e


def mlp_stage(w, k: int, h):
    A, a, B, c, _, _ = mlp_parts(w)
    return torch.tanh(h @ A.T + a) if k == 0 else torch.tanh(h @ B.T + c)


def mlp_head(w, h):
    _, _, _, _, C, e = mlp_parts(w)
    return h @ C.T + e


def reference_local(
    w0: torch.Tensor,
    x,
    y,
    steps: int,
    loss_fn: Callable,
    direction: Callable | None = None,
    lr: float = LR,
    wd: float = WD,
    clip_norm: float | None = None,
) -> torch.Tensor:
    """K full-batch SGD steps: g = clip(∇loss_fn(w)) + wd·w; g = direction(g, w); w ← w − lr·g
    (clip: scale the gradient to norm ≤ clip_norm, with torch's 1e-6 guard)."""
    w = w0.clone().double()
    for _ in range(steps):
        w = w.detach().requires_grad_(True)
        (grad,) = torch.autograd.grad(loss_fn(w, x.double(), y), w)
        if clip_norm is not None:
            grad = grad * min(1.0, clip_norm / (grad.norm().item() + 1e-6))
        g = grad + wd * w.detach()
        if direction is not None:
            g = direction(g, w.detach())
        w = w.detach() - lr * g
    return w.detach()


def ce(logits, y):
    """Mean cross-entropy written out: mean(−z_y + log Σ_c e^{z_c})."""
    return (torch.logsumexp(logits, 1) - logits.gather(1, y[:, None]).squeeze(1)).mean()


def close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-5) -> bool:
    return torch.allclose(a.double(), b.double(), atol=tol, rtol=tol)


def random_init(numel: int, seed: int = 1, scale: float = 0.3) -> torch.Tensor:
    return scale * torch.randn(numel, generator=torch.Generator().manual_seed(seed))
