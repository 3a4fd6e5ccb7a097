"""engine/client_batched.py: every registered model's client-batched forward and gradients equal
its per-client ones; models it cannot batch fall back to vmap with the same numbers.

Tolerance: batched kernels reduce in another order than the per-client ones (see test_vectorised.py).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from vec_support import assert_same, image_simulation, make_jobs, sequential_outcomes, vectorised_outcomes

from benchmark.engine import client_batched
from benchmark.engine.local import make_forward
from benchmark.fl.flat import ParamSpec, flat_params
from benchmark.models.registry import build_model, known_models

# model -> (input shape, params) small enough for a test; every registered model is listed
MODELS = {
    "logistic": ((1, 6, 6), {}),
    "binary_logistic": ((1, 6, 6), {}),
    "femnist_cnn": ((1, 8, 8), {}),
    "femnist_cnn/group": ((1, 8, 8), {"norm": "group"}),
    "celeba_cnn": ((3, 16, 16), {}),
    "resnet18_gn": ((3, 8, 8), {}),
}
NOT_BATCHABLE = {"shakespeare_lstm": "nn.LSTM and nn.Embedding: runs under vmap"}


def test_every_registered_model_is_covered_or_listed():
    covered = {name.split("/")[0] for name in MODELS} | set(NOT_BATCHABLE)
    assert covered == set(known_models())
    for name in NOT_BATCHABLE:
        assert not client_batched.supports(build_model(name, (80,), 80, {}, "default", seed=0))


@pytest.mark.parametrize("name", MODELS)
def test_forward_and_gradients_equal_per_client(name):
    shape, params = MODELS[name]
    classes = 2 if name.startswith("binary") else 5
    model = build_model(name.split("/")[0], shape, classes, params, "default", seed=0)
    assert client_batched.supports(model)
    spec = ParamSpec.of(model)
    forward = make_forward(model, spec)
    gen = torch.Generator().manual_seed(0)
    clients, batch = 3, 4
    w = (flat_params(model) + 0.05 * torch.randn(clients, spec.total, generator=gen)).requires_grad_(True)
    x = torch.randn(clients, batch, *shape, generator=gen)
    y = torch.randint(0, classes, (clients, batch), generator=gen)
    logits, features = client_batched.batched_forward(forward, w, x, features=True)
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none").view(clients, batch)
    (grad,) = torch.autograd.grad(loss.mean(1).sum() + features.pow(2).mean(), w)
    for c in range(clients):
        wc = w[c].detach().requires_grad_(True)
        lc, fc = forward(wc, x[c], features=True)
        (gc,) = torch.autograd.grad(
            torch.nn.functional.cross_entropy(lc, y[c]) + fc.pow(2).sum() / features.numel(), wc
        )
        torch.testing.assert_close(logits[c], lc, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(features[c], fc, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(grad[c], gc, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("norm", ["none", "group"])
def test_femnist_cnn_round_matches_sequential(norm):
    """In float64 (to ~1e-12): in float32 this ReLU/max-pool net turns reduction-order ulps into
    1e-4 gaps within a few rounds (an activation or a max changes sides), which says nothing."""
    (job,) = make_jobs(
        [{"preset": "fedprox", "client": {"prox": {"mu": 0.01}}}], model={"name": "femnist_cnn"}, local={"epochs": 2}
    )
    sim = image_simulation(
        job.config,
        torch.float64,
        model=lambda: build_model("femnist_cnn", (1, 8, 8), 4, {"norm": norm}, "default", seed=0),
    )
    chosen, rnd, received = [0, 3, 5, 7], sim.round_info(0), {"model": sim.progress.theta}
    for seq, vec in zip(
        sequential_outcomes(sim, chosen, rnd, received), vectorised_outcomes(sim, chosen, rnd, received)
    ):
        torch.testing.assert_close(vec.final, seq.final, atol=1e-12, rtol=0)
        assert vec.loss == pytest.approx(seq.loss, abs=1e-6)


class ScaledLogistic(nn.Module):
    """A parameter outside nn.Linear/Conv2d/GroupNorm: client_batched cannot batch it."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 4)
        self.temperature = nn.Parameter(torch.ones(1))

    def forward(self, x, features: bool = False):
        logits = self.fc(x.flatten(1)) * self.temperature
        return (logits, x.flatten(1)) if features else logits


def test_other_models_run_under_vmap_with_the_same_numbers(monkeypatch):
    assert not client_batched.supports(ScaledLogistic())
    calls = []
    monkeypatch.setattr(client_batched, "batched_forward", lambda *a: calls.append(a))
    (job,) = make_jobs(["fedavg"], model={"name": "femnist_cnn"})
    assert_same(job.config, lambda c: image_simulation(c, model=ScaledLogistic))
    assert calls == []
