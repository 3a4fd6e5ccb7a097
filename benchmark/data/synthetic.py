"""LEAF's synthetic(α, β) federated classification data (Shamir et al.; FedProx, Li et al. 2020).

Recipe, per user k of `num_users`:
    u_k ~ N(0, α), B_k ~ N(0, β)
    W_k ~ N(u_k, 1)^{dim x classes}, b_k ~ N(u_k, 1)^{classes}
    v_k ~ N(B_k, 1)^{dim},  x ~ N(v_k, Σ) with Σ = diag(j^{-1.2}), j = 1..dim
    y = argmax(softmax(x W_k + b_k))
    n_k = min(max_samples, ⌊lognormal(4, 2)⌋ + 50); the last `test_fraction` of each user's
    samples form the (global) test set.
α controls how much the users' models differ, β how much their inputs differ; (0, 0) with
`iid: true` draws one shared W, b and v for every user (LEAF's synthetic_iid).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from benchmark.data.source import DATASETS, DatasetSpec, SourceData
from benchmark.lazy import torch
from benchmark.params import StrictParams


class SyntheticParams(StrictParams):
    alpha: float = Field(1.0, ge=0)
    beta: float = Field(1.0, ge=0)
    iid: bool = False
    num_users: int = Field(30, ge=1)
    dim: int = Field(60, ge=1)
    num_classes: int = Field(10, ge=2)
    max_samples: int = Field(400, ge=2)
    test_fraction: float = Field(0.2, gt=0, lt=1)
    seed: int = 0


def generate(p: SyntheticParams) -> SourceData:
    rng = np.random.default_rng(p.seed)
    sizes = np.minimum(rng.lognormal(4, 2, p.num_users).astype(int) + 50, p.max_samples)
    cov = np.diag(np.arange(1, p.dim + 1, dtype=np.float64) ** -1.2)
    mean_w = rng.normal(0, p.alpha, p.num_users)
    mean_x_shift = rng.normal(0, p.beta, p.num_users)
    shared_w, shared_b = rng.normal(0, 1, (p.dim, p.num_classes)), rng.normal(0, 1, p.num_classes)
    parts = {"train": ([], [], []), "test": ([], [], [])}
    for k, n in enumerate(sizes):
        if p.iid:
            w, b, v = shared_w, shared_b, np.zeros(p.dim)
        else:
            w = rng.normal(mean_w[k], 1, (p.dim, p.num_classes))
            b = rng.normal(mean_w[k], 1, p.num_classes)
            v = rng.normal(mean_x_shift[k], 1, p.dim)
        x = rng.multivariate_normal(v, cov, int(n))
        y = np.argmax(x @ w + b, axis=1)  # softmax is monotone
        n_test = max(1, int(round(p.test_fraction * n)))
        for split, sl in (("train", slice(0, n - n_test)), ("test", slice(n - n_test, n))):
            xs, ys, us = parts[split]
            xs.append(x[sl]), ys.append(y[sl]), us.append(np.full(len(y[sl]), k))

    def cat(split: str, i: int, dtype):
        return torch.from_numpy(np.concatenate(parts[split][i])).to(dtype)

    return SourceData(
        train_x=cat("train", 0, torch.float32),
        train_y=cat("train", 1, torch.long),
        test_x=cat("test", 0, torch.float32),
        test_y=cat("test", 1, torch.long),
        num_classes=p.num_classes,
        kind="vector",
        train_users=cat("train", 2, torch.long),
        test_users=cat("test", 2, torch.long),
        user_names=[f"synthetic_{k:04d}" for k in range(p.num_users)],
    )


DATASETS.register(DatasetSpec("synthetic", lambda p, root: generate(p), params=SyntheticParams))  # no files
