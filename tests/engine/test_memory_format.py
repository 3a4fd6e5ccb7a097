"""engine/memory_format.py: which models run channels-last, and that the flat forward gives the
NCHW numbers (float rounding apart) with the parameter vector untouched, under vmap too."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.func import grad, vmap

from benchmark.engine.local import make_forward
from benchmark.engine.memory_format import channels_last_pays, to_channels_last
from benchmark.fl.flat import ParamSpec, flat_params
from benchmark.models.registry import build_model

CPU, CUDA = torch.device("cpu"), torch.device("cuda")  # a device object needs no GPU
# every registered model with a convolution, small inputs
CONV_MODELS = {
    "resnet18_gn": ((3, 8, 8), {}),
    "femnist_cnn": ((1, 28, 28), {}),
    "femnist_cnn/group": ((1, 28, 28), {"norm": "group"}),
    "celeba_cnn": ((3, 24, 24), {}),
}


def build(name: str):
    shape, params = CONV_MODELS[name]
    return build_model(name.split("/")[0], shape, 5, params, "default", seed=0), shape


def test_the_rule_is_cpu_and_a_convolution():
    for name in CONV_MODELS:
        model, _ = build(name)
        assert channels_last_pays(model, CPU)
        assert not channels_last_pays(model, CUDA)  # GroupNorm is NCHW-only there
    assert not channels_last_pays(build_model("logistic", (5,), 3, {}, "default", seed=0), CPU)
    assert not channels_last_pays(build_model("shakespeare_lstm", (12,), 80, {}, "default", seed=0), CPU)


def test_to_channels_last_keeps_values_and_gives_nhwc_strides():
    t = torch.randn(2, 3, 4, 5)
    out = to_channels_last(t)
    assert torch.equal(out, t)
    assert out.is_contiguous(memory_format=torch.channels_last) and not out.is_contiguous()
    assert to_channels_last(out).data_ptr() == out.data_ptr()  # already NHWC: no copy


@pytest.mark.parametrize("name", CONV_MODELS)
def test_channels_last_forward_and_gradient_equal_nchw(name):
    model, shape = build(name)
    spec = ParamSpec.of(model)
    nchw, nhwc = make_forward(model, spec), make_forward(model, spec, channels_last=True)
    x, y = torch.randn(4, *shape, generator=torch.Generator().manual_seed(0)), torch.arange(4) % 5
    w = flat_params(model)
    before = w.clone()

    def loss_and_grad(forward):
        v = w.clone().requires_grad_(True)
        loss = F.cross_entropy(forward(v, x), y)
        return loss, torch.autograd.grad(loss, v)[0]

    (loss_a, grad_a), (loss_b, grad_b) = loss_and_grad(nchw), loss_and_grad(nhwc)
    torch.testing.assert_close(loss_b, loss_a, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(grad_b, grad_a, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(nhwc(w, x, features=True)[1], nchw(w, x, features=True)[1], rtol=1e-5, atol=1e-5)
    logits, stages = nhwc(w, x, stages=True)
    nhwc_out = [h.dim() == 4 and h.is_contiguous(memory_format=torch.channels_last) for h in stages]
    assert any(nhwc_out)  # the convolutions did run NHWC (a 1-channel first one may not: both layouts fit it)
    torch.testing.assert_close(nhwc(w, stages[0], start=1), logits)  # FedMLB's hybrid path
    assert torch.equal(w, before)  # the flat vector (NCHW views) is only read


def test_channels_last_forward_runs_under_vmap():
    """The vectorised trainer's fallback differentiates the forward under vmap, where
    Tensor.contiguous(memory_format=...) is refused."""
    model, shape = build("femnist_cnn")
    spec = ParamSpec.of(model)
    forward = make_forward(model, spec, channels_last=True)
    gen = torch.Generator().manual_seed(0)
    w = flat_params(model) + 0.01 * torch.randn(2, spec.total, generator=gen)
    x, y = torch.randn(2, 3, *shape, generator=gen), torch.randint(0, 5, (2, 3), generator=gen)
    loss = lambda v, xs, ys: F.cross_entropy(forward(v, xs), ys)  # noqa: E731
    batched = vmap(grad(loss))(w, x, y)
    for c in range(2):
        torch.testing.assert_close(batched[c], grad(loss)(w[c], x[c], y[c]), rtol=1e-4, atol=1e-6)
