"""One forward call for C clients' models at once, on native batched kernels.

Parameters carry a leading client dimension (C, ...) (`ParamSpec.unflatten` of a (C, P) matrix);
activations fold the clients into the batch dimension, client-major: (C·B, ...). Every
parameter-free op of a model (relu, pooling, flatten, mean, residual adds) then runs unchanged,
and only the parametrised functionals are rewritten, by a TorchFunctionMode:

- F.linear     -> one baddbmm over the clients;
- F.conv2d     -> one grouped convolution (groups × C), clients folded into the channels;
- F.group_norm -> the native kernel on each client's slice of the batch (GroupNorm never mixes
                  samples, so this is exactly per-client GroupNorm).

torch.func.vmap reaches the same numbers but decomposes convolutions and GroupNorm into hundreds
of small ops per step, which made it slower than training clients one by one on CPU. On CPU a
grouped convolution costs about what C separate ones do (benchmarks/README.md), so CNNs gain
little there; the win is in the overhead of small models.

A model qualifies when every module owning parameters is an nn.Linear, nn.Conv2d or nn.GroupNorm
(their forwards call exactly these functionals); the parity tests run every registered model.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

BATCHABLE = (nn.Linear, nn.Conv2d, nn.GroupNorm)


def supports(model: nn.Module) -> bool:
    """Whether every parameter of `model` lives in a layer this module knows how to batch."""
    owners = [m for m in model.modules() if any(True for _ in m.parameters(recurse=False))]
    return all(type(m) in BATCHABLE for m in owners)


@functools.cache
def keep_freed_memory() -> None:
    """Stop glibc handing (C, P)-sized temporaries back to the kernel on every free.

    Each step allocates several model-sized tensors per client; allocated by mmap (or trimmed
    off the heap) they page-fault afresh every step, which cost more than the arithmetic
    (measured: benchmarks/README.md, Measurements behind code comments). Freed memory then stays with the process, for
    reuse. A no-op where glibc's mallopt is unavailable.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4
    libc.mallopt(M_MMAP_MAX, 0)
    libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1)


@dataclass
class LinearTape:
    """What a step that applies the linear layers' weight gradients itself needs (engine/low_rank_step.py):
    per linear call, {"weight", "bias", "rows": its input (C, N, in), "out_grad": (C, N, out) after the backward}."""

    anchor: torch.Tensor  # a scalar that requires grad: differentiate with respect to it
    calls: list[dict] = field(default_factory=list)


def _linear(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, tape: LinearTape | None = None
) -> torch.Tensor:
    clients, out_features = weight.shape[0], weight.shape[1]
    rows = x.reshape(clients, -1, x.shape[-1])
    if tape is None:
        y = _affine(rows, weight, bias)
    else:
        slot = {"weight": weight, "bias": bias, "rows": rows.detach()}
        tape.calls.append(slot)
        y = _LinearOutputGradient.apply(rows, weight, bias, slot, tape.anchor)
    return y.transpose(1, 2).reshape(*x.shape[:-1], out_features)


def _affine(rows: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """W·rowsᵀ (+ b) per client, (C, out, N). W·xᵀ rather than x·Wᵀ: the weight's gradient
    (C, out, in) then comes out contiguous, not as a transposed view that the flat gradient would
    have to copy."""
    if bias is None:
        return torch.bmm(weight, rows.transpose(1, 2))
    return torch.baddbmm(bias.unsqueeze(2), weight, rows.transpose(1, 2))


class _LinearOutputGradient(torch.autograd.Function):
    """The client-batched linear whose backward hands the output's gradient (C, N, out) to the
    caller (`slot["out_grad"]`) instead of forming the weight's: engine/low_rank_step.py applies
    it to the weights itself. The input's gradient comes as Dy·W, the layout MKL runs fastest
    (Wᵀ·Dyᵀ was slower on the FEMNIST CNN's fc1: benchmarks/README.md, Measurements behind code
    comments). `anchor` (a scalar that requires grad) makes autograd run this backward even where
    nothing else before it needs a gradient."""

    @staticmethod
    def forward(ctx, rows, weight, bias, slot, anchor):
        ctx.weight, ctx.slot = weight, slot
        return _affine(rows, weight, bias)

    @staticmethod
    def backward(ctx, out_grad):
        out_grad = out_grad.transpose(1, 2)
        ctx.slot["out_grad"] = out_grad
        rows_grad = torch.bmm(out_grad, ctx.weight) if ctx.needs_input_grad[0] else None
        return rows_grad, None, None, None, torch.zeros((), dtype=out_grad.dtype, device=out_grad.device)


def _fold_channels(x: torch.Tensor, clients: int) -> torch.Tensor:
    """(C·B, ch, ...) -> (B, C·ch, ...): client c's channels become group c of a grouped conv."""
    rest = x.shape[1:]
    return x.reshape(clients, -1, *rest).transpose(0, 1).reshape(-1, clients * rest[0], *rest[1:])


def _unfold_channels(y: torch.Tensor, clients: int) -> torch.Tensor:
    """(B, C·ch, ...) -> (C·B, ch, ...)."""
    batch, rest = y.shape[0], y.shape[2:]
    return y.reshape(batch, clients, -1, *rest).transpose(0, 1).reshape(clients * batch, -1, *rest)


def _conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    clients = weight.shape[0]
    y = F.conv2d(
        _fold_channels(x, clients),
        weight.flatten(0, 1),
        None if bias is None else bias.flatten(),
        stride,
        padding,
        dilation,
        groups * clients,
    )
    return _unfold_channels(y, clients)


def _group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    """GroupNorm never mixes samples, so each client's slice through the native kernel is exactly
    per-client GroupNorm. (One call without affine plus a broadcast per-client affine was slower
    on CPU: the affine's backward reduces over non-contiguous dims; so was one grouped call on the
    channel-folded layout, through the two transposing copies; benchmarks/README.md, Measurements
    behind code comments.)"""
    clients = weight.shape[0]
    return torch.cat(
        [
            F.group_norm(xc, num_groups, weight[c], None if bias is None else bias[c], eps)
            for c, xc in enumerate(x.chunk(clients))
        ]
    )


# functional -> (its rewrite, the weight's position among the arguments, the weight's number of
# dims when it carries the client dimension)
_REWRITES = {F.linear: (_linear, 1, 3), F.conv2d: (_conv2d, 1, 5), F.group_norm: (_group_norm, 2, 2)}


class ClientBatched(TorchFunctionMode):
    """Within it, a model called with client-stacked parameters runs every client at once.

    With a `tape`, the linear layers record their inputs and output gradients there and form no
    weight gradient (LinearTape).
    """

    def __init__(self, tape: LinearTape | None = None):
        super().__init__()
        self.tape = tape

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rewrite = _REWRITES.get(func)
        if rewrite is not None:
            fn, position, dims = rewrite
            weight = args[position] if len(args) > position else kwargs.get("weight")
            if weight is not None and weight.dim() == dims:
                if fn is _linear and self.tape is not None:
                    kwargs = {**kwargs, "tape": self.tape}
                return fn(*args, **kwargs)
        return func(*args, **kwargs)


def logits_misfit(logits: torch.Tensor, clients: int, batch: int) -> str | None:
    """Why client-batched `logits` cannot be C clients' B rows each, or None."""
    if logits.shape[0] == clients * batch:
        return None
    return (
        f"client-batched forward returned {tuple(logits.shape)} for {clients} clients x {batch} "
        "samples: the model uses a parameter outside nn.Linear/nn.Conv2d/nn.GroupNorm's forward"
    )


def batched_forward(forward, weights: torch.Tensor, x: torch.Tensor, features: bool):
    """`forward` (engine/local.make_forward) of C clients: weights (C, P), x (C, B, ...) ->
    logits (C, B, classes) and, with `features`, features (C, B, ...)."""
    clients, batch = x.shape[:2]
    with ClientBatched():
        out = forward(weights, x.flatten(0, 1), features=features)
    logits, feats = out if features else (out, None)
    if (why := logits_misfit(logits, clients, batch)) is not None:
        raise RuntimeError(why)
    unfold = lambda t: t.reshape(clients, batch, *t.shape[1:])  # noqa: E731
    return unfold(logits), None if feats is None else unfold(feats)
