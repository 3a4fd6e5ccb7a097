"""One client's local training, written on a flat parameter vector with functional_call.

Step (docs/algorithms.md, Local training): loss = w_ce·CE(adjusted logits) + Σ term losses;
g = clip(∇loss, clip_norm) + weight_decay·w; g = term.direction(g) for each term; w ← w − η g.
(The gradient is taken at gradient_point(w), which is w unless a term moves it; take_step_ is
w − η g unless a term takes the step itself: FedAc.)

The sequential path updates w in place and allocates no model-sized tensor besides the gradient
(on a small-batch CNN the old out-of-place update was a third of the step): sgd_step_ fuses the
whole update when no term touches the step (a few ulps off the pure form), descent_direction_ and
take_step_ keep the pure form's bits otherwise. descent_direction (pure) serves vmap.
tests/engine/test_local_step.py checks both against the out-of-place formula.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from benchmark.engine.fed_data import Batch
from benchmark.engine.memory_format import to_channels_last
from benchmark.engine.round_tally import SILENT, RoundTally
from benchmark.fl.base import ClientContext, ClientTerm, ForwardOut
from benchmark.fl.flat import ParamSpec
from benchmark.job.settings import LocalTraining

AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}


def make_forward(model: nn.Module, spec: ParamSpec, precision: str = "fp32", channels_last: bool = False):
    """forward(w_flat, x, features=False, **model_kwargs) for any flat parameter vector.

    Extra keyword arguments go to the model's forward (e.g. FedMLB's `stages=True` / `start=k`).
    `channels_last`: 4-D inputs and weights enter the model in NHWC order (engine/memory_format.py).
    """

    def forward(w: torch.Tensor, x: torch.Tensor, features: bool = False, **kwargs):
        params = spec.unflatten(w)
        if channels_last:
            params = {k: to_channels_last(p) if p.dim() == 4 else p for k, p in params.items()}
            x = to_channels_last(x) if x.dim() == 4 else x
        ctx = (
            torch.autocast(x.device.type, dtype=AUTOCAST[precision])
            if precision in AUTOCAST
            else contextlib.nullcontext()
        )
        with ctx:
            out = functional_call(model, params, (x,), {"features": features, **kwargs})
        # logits (and features) leave autocast in float32 at least (float64 stays: the authors' stream),
        # so every loss is computed in full precision
        if kwargs.get("stages"):
            return full_precision(out[0]), out[1]
        if features:
            return full_precision(out[0]), full_precision(out[1])
        return full_precision(out)

    return forward


def full_precision(t: torch.Tensor) -> torch.Tensor:
    """Logits for the loss: float32 at least, float64 kept (the authors' stream runs in float64)."""
    return t if t.dtype == torch.float64 else t.float()


def compiled(forward, device: torch.device):
    """`compile: true`: torch.compile of the forward, so its backward is compiled too (the local
    step's cost); on CUDA in "reduce-overhead" mode, which replays the step as a CUDA graph."""
    return torch.compile(forward, mode="reduce-overhead" if device.type == "cuda" else None)


def clip_by_norm(g: torch.Tensor, max_norm: float | None) -> torch.Tensor:
    """torch.nn.utils.clip_grad_norm_ on a flat gradient (same 1e-6 guard); on (C, P), each row."""
    if max_norm is None:
        return g
    return g * clip_factor(g, max_norm)


def clip_factor(g: torch.Tensor, max_norm: float) -> torch.Tensor:
    """min(1, max_norm / (‖g‖ + 1e-6)), as a tensor (no host sync); for (C, P) rows, one per row (C, 1)."""
    return torch.clamp(max_norm / (row_norms(g) + 1e-6), max=1.0)


# Elements per partial norm. torch's float32 norm of one long vector drifts on CPU (6.6 M
# elements, the FEMNIST CNN: 2e-4 relative error, enough to steer a clipped run); norms of
# 16 k-element pieces combined in float64 stay within 1e-7, at the same speed (one thread).
NORM_CHUNK = 1 << 14


def row_norms(g: torch.Tensor) -> torch.Tensor:
    """‖·‖ over the last dim of g, kept as a (…, 1) dim, accurate at any length."""
    n = g.shape[-1]
    whole = n - n % NORM_CHUNK
    if whole == 0:
        return g.norm(dim=-1, keepdim=True)
    parts = [g[..., :whole].reshape(*g.shape[:-1], -1, NORM_CHUNK).norm(dim=-1)]
    if whole < n:
        parts.append(g[..., whole:].norm(dim=-1, keepdim=True))
    return torch.cat(parts, -1).double().norm(dim=-1, keepdim=True).to(g.dtype)


def ce_weight_of(ctx: ClientContext, terms: list[ClientTerm]) -> float:
    """Product of the terms' multipliers on the cross-entropy."""
    weight = 1.0
    for term in terms:
        weight *= term.ce_weight(ctx)
    return weight


def step_loss(
    ctx: ClientContext,
    terms: list[ClientTerm],
    w: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    ce_weight,
    needs_features: bool,
) -> torch.Tensor:
    """One step's local objective: ce_weight·CE(adjusted logits) + Σ term losses.

    Shared by the sequential path (autograd on w) and the vectorised one (torch.func.grad under vmap).
    """
    raw = ctx.forward(w, x, features=needs_features)
    return objective(ctx, terms, w, ForwardOut(*raw) if needs_features else ForwardOut(raw), x, y, ce_weight)


def objective(
    ctx: ClientContext,
    terms: list[ClientTerm],
    w: torch.Tensor,
    out: ForwardOut,
    x: torch.Tensor,
    y: torch.Tensor,
    ce_weight,
) -> torch.Tensor:
    """step_loss given the forward's output (the client-batched trainer runs the forward itself)."""
    logits = out.logits
    for term in terms:
        logits = term.adjust_logits(ctx, logits)
    loss = ce_weight * F.cross_entropy(logits, y)
    for term in terms:
        extra = term.loss(ctx, w, out, x, y)
        if extra is not None:
            loss = loss + extra
    return loss


def descent_direction(grad: torch.Tensor, w: torch.Tensor, local: LocalTraining) -> torch.Tensor:
    """clip(∇loss) + weight_decay·w, before any term rewrites the direction (rows of (C, P): per client)."""
    return clip_by_norm(grad, local.clip_norm) + local.weight_decay * w


def descent_direction_(
    grad: torch.Tensor, w: torch.Tensor, local: LocalTraining, decay: torch.Tensor | None
) -> torch.Tensor:
    """descent_direction written into `grad` (which the caller owns); `decay` is a w-sized buffer
    for weight_decay·w (a product first, then the sum: the pure form's rounding, bit for bit)."""
    if local.clip_norm is not None:
        grad.mul_(clip_factor(grad, local.clip_norm))
    if local.weight_decay:
        grad.add_(torch.mul(w, local.weight_decay, out=decay))
    return grad


def rewrite_direction(ctx: ClientContext, terms: list[ClientTerm], w: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Let every term rewrite the step direction, in order (SCAFFOLD, FedCM)."""
    for term in terms:
        g = term.direction(ctx, w, g)
    return g


def gradient_point(ctx: ClientContext, terms: list[ClientTerm], w: torch.Tensor) -> torch.Tensor:
    """Where the step's gradient is taken: w itself unless a term moves it (FedAc's w_md)."""
    for term in terms:
        w = term.grad_point(ctx, w)
    return w


def take_step_(
    ctx: ClientContext, terms: list[ClientTerm], w: torch.Tensor, point: torch.Tensor, g: torch.Tensor, lr: float
) -> torch.Tensor:
    """The first term that takes the step itself (FedAc), else plain SGD w −= lr·g in place
    (scaling `g`, which is the caller's)."""
    for term in terms:
        new = term.step(ctx, w, point, g, lr)
        if new is not None:
            return new
    return w.sub_(g.mul_(lr))


def sgd_step_(w: torch.Tensor, grad: torch.Tensor, local: LocalTraining, lr: float) -> torch.Tensor:
    """w ← w − lr·(clip(grad) + λ·w) for methods whose terms leave the step alone, fused in place
    as w·(1 − lr·λ) − lr·s·grad (s: the clip factor, a tensor: no host sync): two passes over w
    instead of six. Rounding differs from the pure form by a few ulps per step."""
    if local.weight_decay:
        w.mul_(1 - lr * local.weight_decay)
    if local.clip_norm is None:
        return w.add_(grad, alpha=-lr)
    return w.addcmul_(grad, clip_factor(grad, local.clip_norm), value=-lr)


def overrides(term: ClientTerm, *hooks: str) -> bool:
    """Whether `term`'s class replaces any of ClientTerm's `hooks` (methods named by string)."""
    cls = type(term)
    return any(getattr(cls, h) is not getattr(ClientTerm, h) for h in hooks)


def set_step_budget(ctx: ClientContext, epochs: list[int]) -> None:
    """K and Σ_k η_k (from each step's epoch), which SCAFFOLD's and FedCM's per-step normalisations divide by."""
    ctx.steps = len(epochs)
    ctx.lr_sum = sum(ctx.rnd.step_lr(e) for e in epochs)


def train_client(
    ctx: ClientContext,
    terms: list[ClientTerm],
    batches: list[Batch],
    local: LocalTraining,
    low_rank=None,
    tally: RoundTally = SILENT,
):
    """Returns (w_K, mean training loss over the steps). `low_rank`: engine/low_rank_step's fused
    step where it applies and pays (the trainer's LocalStepChoice), else None; where it declines (returns
    None, w untouched) the plain step takes over. `tally` counts each step taken."""
    for term in terms:
        batches = term.regroup(batches)
    set_step_budget(ctx, [b.epoch for b in batches])
    for term in terms:
        term.begin(ctx)
    needs_features = any(t.needs_features for t in terms)
    ce_weight = ce_weight_of(ctx, terms)

    w = ctx.start.detach().clone()
    fused = not any(overrides(t, "direction", "grad_point", "step") for t in terms)
    decay = torch.empty_like(w) if local.weight_decay and not fused else None
    losses = []
    ce_weights = torch.tensor([ce_weight], device=w.device) if low_rank is not None else None  # one client's (C,)
    for batch in batches:
        if low_rank is not None:  # the same step as sgd_step_'s, its linear weight gradients never formed
            lr = ctx.rnd.step_lr(batch.epoch)
            loss = low_rank(
                w.unsqueeze(0), batch.x.unsqueeze(0), batch.y.unsqueeze(0), ce_weights, local, lr, ctx.start
            )
            if loss is not None:
                losses.append(loss[0])
                tally.step()
                continue
            low_rank = None  # it declined (w untouched): the plain step from here on
        with torch.no_grad():
            point = gradient_point(ctx, terms, w)  # the very tensor w for every method but FedAc
        point.requires_grad_(True)
        loss = step_loss(ctx, terms, point, batch.x, batch.y, ce_weight, needs_features)
        (grad,) = torch.autograd.grad(loss, point)  # frees the graph, so w may change in place
        point.requires_grad_(False)
        lr = ctx.rnd.step_lr(batch.epoch)
        with torch.no_grad():
            if fused:
                sgd_step_(w, grad, local, lr)
            else:
                g = rewrite_direction(ctx, terms, point, descent_direction_(grad, point, local, decay))
                w = take_step_(ctx, terms, w, point, g, lr)
        losses.append(loss.detach())
        tally.step()
    for term in terms:
        term.finish(ctx, w)
    mean_loss = torch.stack(losses).mean().item() if losses else float("nan")
    return w, mean_loss


def evaluate(forward, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, preprocess, batch_size: int = 2048):
    """(accuracy in %, mean cross-entropy) of the model `theta` on (x, y)."""
    acc, loss, _ = evaluate_by_group(forward, theta, x, y, preprocess, None, batch_size)
    return acc, loss


@torch.no_grad()  # also when called directly (the last round's per-user pass): no autograd bookkeeping
def evaluate_by_group(
    forward, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, preprocess, groups, batch_size: int = 2048
) -> tuple[float, float, list[float] | None]:
    """(accuracy in %, mean cross-entropy, accuracy in % per group) of the model `theta` on (x, y)
    in one pass; `groups` (each example's group index, e.g. the user of a LEAF test example) adds
    only a count of correct examples per group per batch (a group without examples: nan); None:
    no groups. The sums stay on the device and are read once (not two synchronisations per batch)."""
    sums = torch.zeros(2, dtype=torch.float64, device=theta.device)  # correct, loss
    by_group = None if groups is None else torch.zeros(int(groups.max()) + 1, dtype=torch.float64, device=theta.device)
    for i in range(0, len(y), batch_size):
        logits = forward(theta, preprocess(x[i : i + batch_size], False, None))
        yb = y[i : i + batch_size]
        hits = logits.argmax(1) == yb
        sums[0] += hits.sum()
        sums[1] += F.cross_entropy(logits, yb, reduction="sum")
        if by_group is not None:
            by_group.index_add_(0, groups[i : i + batch_size], hits.double())
    correct, loss_sum = sums.tolist()
    per_group = None
    if by_group is not None:
        sizes = torch.bincount(groups, minlength=len(by_group)).double()
        per_group = (100.0 * by_group / sizes).tolist()  # 0/0: nan
    return 100.0 * correct / len(y), loss_sum / len(y), per_group
