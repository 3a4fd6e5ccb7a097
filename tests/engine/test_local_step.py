"""The in-place local step (engine/local.py) gives the numbers of the out-of-place formula it replaced,
g = clip(∇loss) + λ·w, w ← w − η·g, each a new tensor: the same bits when a term may rewrite the
direction, a few ulps when the plain SGD step is fused."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from benchmark.engine.fed_data import Batch
from benchmark.engine.local import clip_by_norm, make_forward, row_norms, train_client
from benchmark.fl.base import ClientContext, ClientTerm, RoundInfo
from benchmark.fl.flat import ParamSpec, flat_params
from benchmark.job.settings import LocalTraining
from tests.fedtest import StageMLP


def out_of_place_reference(forward, start, batches, local: LocalTraining, lr: float) -> torch.Tensor:
    w = start.clone()
    for batch in batches:
        w.requires_grad_(True)
        (grad,) = torch.autograd.grad(F.cross_entropy(forward(w, batch.x), batch.y), w)
        with torch.no_grad():
            g = clip_by_norm(grad, local.clip_norm) + local.weight_decay * w
            w = w.detach() - lr * g
    return w


class SameDirection(ClientTerm):
    """Overrides direction (as SCAFFOLD and FedCM do) without changing it: the unfused path."""

    name = "same_direction"

    def direction(self, ctx, w, g):
        return g


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("clip_norm, weight_decay", [(0.05, 1e-2), (None, 0.0), (10.0, 1e-3), (None, 1e-2)])
def test_in_place_step_gives_the_out_of_place_numbers(clip_norm, weight_decay, fused):
    torch.manual_seed(0)
    model = StageMLP(classes=5, hidden=16, in_dim=12)
    spec = ParamSpec.of(model)
    forward = make_forward(model, spec)
    start = flat_params(model)
    batches = [Batch(torch.randn(8, 12), torch.randint(0, 5, (8,)), 0) for _ in range(6)]
    local = LocalTraining(steps=6, batch_size=8, lr=0.3, weight_decay=weight_decay, clip_norm=clip_norm)
    rnd = RoundInfo(round=0, schedule=local.lr_schedule, num_clients=1, spec=spec)
    ctx = ClientContext(
        client_id=0,
        rnd=rnd,
        received={"model": start},
        num_samples=48,
        forward=forward,
        state={},
        class_counts=torch.ones(5),
    )

    w, _ = train_client(ctx, [] if fused else [SameDirection(None)], batches, local)

    expected = out_of_place_reference(forward, start, batches, local, local.lr)
    if fused:
        torch.testing.assert_close(w, expected, rtol=0, atol=1e-6)
    else:
        assert torch.equal(w, expected)
    assert not torch.equal(w, start)
    assert torch.equal(start, flat_params(model))  # the received model is never written


@pytest.mark.parametrize("shape", [(6_603_710,), (3, 100_003), (2, 500)])
def test_clip_norm_is_accurate_at_model_size(shape):
    """The clip factor's norm matches float64 to 1e-6 relative at the FEMNIST CNN's size, where a
    single float32 torch.norm drifted by 2e-4 (and so steered clipped runs); rows stay separate."""
    g = torch.randn(shape, generator=torch.Generator().manual_seed(0)) * 1e-2 + 3e-3
    exact = g.double().norm(dim=-1, keepdim=True)
    assert row_norms(g).shape == exact.shape
    assert torch.allclose(row_norms(g).double(), exact, rtol=1e-6, atol=0)
