"""The model protocol of benchmark/models/registry.py, checked on every registered model."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import torch
import torch.nn.functional as F

from benchmark.engine.local import make_forward
from benchmark.fl.flat import ParamSpec, flat_params
from benchmark.models.registry import build_model


@dataclass
class Case:
    name: str
    input_shape: tuple[int, ...]
    num_classes: int
    feature_dim: int
    params: dict = field(default_factory=dict)
    staged: bool = True
    lr: float = 1e-2  # small enough for a first-order decrease on this case's batch

    def inputs(self, n: int = 4) -> torch.Tensor:
        g = torch.Generator().manual_seed(1)
        if self.name == "shakespeare_lstm":
            return torch.randint(0, 80, (n, *self.input_shape), generator=g)
        return torch.randn(n, *self.input_shape, generator=g)

    def labels(self, n: int = 4) -> torch.Tensor:
        return torch.arange(n) % self.num_classes


# small inputs keep every test well under a second on CPU
CASES = [
    Case("resnet18_gn", (3, 8, 8), 10, 512, lr=1e-3),
    Case("femnist_cnn", (1, 28, 28), 62, 2048),
    Case("femnist_cnn", (1, 28, 28), 62, 2048, {"norm": "group"}),
    Case("celeba_cnn", (3, 84, 84), 2, 32 * 6 * 6, lr=1e-3),
    Case("shakespeare_lstm", (12,), 80, 256, lr=1e-1),
    Case("logistic", (5,), 3, 5, staged=False, lr=1e-1),
]
IDS = [c.name + ("-" + "-".join(f"{k}={v}" for k, v in c.params.items()) if c.params else "") for c in CASES]
STAGED = [c for c in CASES if c.staged]
STAGED_IDS = [i for c, i in zip(CASES, IDS) if c.staged]


def build(case: Case) -> torch.nn.Module:
    return build_model(case.name, case.input_shape, case.num_classes, case.params, "default", seed=0)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_buffer_free_and_flat_spec(case):
    model = build(case)
    assert list(model.buffers()) == []
    assert ParamSpec.of(model).total == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_logits_and_features_shapes(case):
    model, x = build(case), case.inputs()
    logits, z = model(x, features=True)
    assert logits.shape == (4, case.num_classes)
    assert z.shape == (4, case.feature_dim)
    torch.testing.assert_close(model(x), logits)


@pytest.mark.parametrize("case", STAGED, ids=STAGED_IDS)
def test_restarting_from_any_stage_reproduces_the_logits(case):
    model, x = build(case), case.inputs()
    logits, stages = model(x, stages=True)
    assert len(stages) == model.num_stages
    torch.testing.assert_close(logits, model(x))
    torch.testing.assert_close(model(x, start=0), logits)
    for k in range(1, model.num_stages + 1):
        torch.testing.assert_close(model(stages[k - 1], start=k), logits, msg=f"start={k}")


@pytest.mark.parametrize("case", STAGED, ids=STAGED_IDS)
def test_ambiguous_stage_requests_are_rejected(case):
    model, x = build(case), case.inputs()
    with pytest.raises(ValueError, match="stages=True"):
        model(x, stages=True, features=True)
    with pytest.raises(ValueError, match="start"):
        model(x, start=model.num_stages + 1)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_flat_vector_forward_matches_the_module(case):
    model, x = build(case), case.inputs()
    spec = ParamSpec.of(model)
    forward = make_forward(model, spec)
    w = flat_params(model)
    torch.testing.assert_close(forward(w, x), model(x))
    torch.testing.assert_close(forward(w, x, features=True)[1], model(x, features=True)[1])
    # a different vector must change the output: the module's own weights are not used
    assert not torch.allclose(forward(1.5 * w, x), model(x))
    if case.staged:
        logits, stages = forward(w, x, stages=True)
        torch.testing.assert_close(forward(w, stages[0], start=1), logits)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_one_sgd_step_reduces_the_loss(case):
    # on the module's own parameters: the flat path is checked above, and its backward through
    # ParamSpec.unflatten's slices costs seconds for ResNet-18 on CPU
    model, x, y = build(case), case.inputs(), case.labels()
    params = list(model.parameters())
    loss = F.cross_entropy(model(x), y)
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        for p, g in zip(params, grads):
            p -= case.lr * g
        after = F.cross_entropy(model(x), y)
    assert sum(g.norm() for g in grads) > 0
    assert after < loss.detach()


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.name != "resnet18_gn"],
    ids=[i for c, i in zip(CASES, IDS) if c.name != "resnet18_gn"],
)
def test_flat_vector_gradient_matches_the_module(case):
    # the engine trains through functional_call on a flat vector (nn.LSTM included);
    # ResNet-18 is left out only for time (see test_one_sgd_step_reduces_the_loss)
    model, x, y = build(case), case.inputs(), case.labels()
    spec = ParamSpec.of(model)
    w = flat_params(model).requires_grad_(True)
    (flat_grad,) = torch.autograd.grad(F.cross_entropy(make_forward(model, spec)(w, x), y), w)
    module_grads = torch.autograd.grad(F.cross_entropy(model(x), y), list(model.parameters()))
    torch.testing.assert_close(flat_grad, torch.cat([g.reshape(-1) for g in module_grads]))
