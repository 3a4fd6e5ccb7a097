"""LEAF's synthetic(α, β) recipe: seeded, natural users, sizes as documented."""

from __future__ import annotations

import pytest
import torch

from benchmark.data.synthetic import SyntheticParams, generate


def test_same_seed_same_data_and_users_are_natural_clients():
    p = SyntheticParams(num_users=8, dim=12, num_classes=4, max_samples=80, seed=3)
    a, b = generate(p), generate(p)
    assert torch.equal(a.train_x, b.train_x) and torch.equal(a.train_y, b.train_y)
    assert not torch.equal(a.train_x, generate(p.model_copy(update={"seed": 4})).train_x)
    sizes = torch.bincount(a.train_users)
    assert len(sizes) == 8 and sizes.min() >= 40  # n ≥ 50 minus the 20% test share
    assert a.train_x.shape[1] == 12 and int(a.train_y.max()) < 4 and a.kind == "vector"


def test_iid_variant_shares_one_labelling_model():
    """With iid: true all users' labels come from the same (W, b): a single linear model fits them."""
    src = generate(SyntheticParams(iid=True, num_users=5, dim=6, num_classes=3, max_samples=100))
    x = torch.cat([src.train_x, src.test_x])
    y = torch.cat([src.train_y, src.test_y])
    w = torch.zeros(6, 3, requires_grad=True)
    b = torch.zeros(3, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=300)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(x @ w + b, y)
        loss.backward()
        return loss

    opt.step(closure)
    assert ((x @ w + b).argmax(1) == y).float().mean() > 0.97


def test_unknown_parameter_is_rejected():
    with pytest.raises(ValueError, match="extra"):
        SyntheticParams(alpah=1.0)
