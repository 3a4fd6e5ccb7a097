"""The client-batched SGD step that never materialises a linear layer's weight gradient.

A client's weight gradient of a linear layer is rank N (N = the rows the layer saw: batch ×
positions): G_c = D_cᵀ X_c, with X_c the layer's input and D_c the loss's gradient at its output.
The usual step writes G (model-sized), copies it into the flat (C, P) gradient, reads it for
the clip norm and again for the update. Here a backward stops at the linear outputs and the
step applies each D_cᵀ X_c straight into the weights, with weight decay as baddbmm_'s beta:

    W_c ← (1 − ηλ)·W_c − η·s_c·D_cᵀ X_c,   s_c = min(1, clip / (‖∇loss_c‖ + 1e-6))

‖∇loss_c‖² sums the other (small) parameters' gradients and, per linear layer, the bias
gradient Σ_n D_c[n] and ‖D_cᵀ X_c‖²_F = ⟨X_c X_cᵀ, D_c D_cᵀ⟩_F (two N×N Gram matrices). The
linear weights are then read once by the forward and once by the update: on the FEMNIST CNN's
fc1 (6.4 M parameters) that replaces about eight model-sized passes by three.

The same step as local.sgd_step_ (docs/algorithms.md: w ← w − η(clip(∇loss) + λw)), up to float
rounding; it applies only when nothing else shapes the step: no client term that adjusts the
logits, adds a loss, rewrites the direction or moves the step (FedAvg, FedAvgM, FedAdam, FedPAQ),
except the proximal term (FedProx, FedACG, FedAGM), whose gradient ρ(w − x_i) is folded in: the
small parameters' gradients get it added, a weight block's gradient is DᵀX + ρM (M = W − x_i, one
model-sized temporary) and its square ‖DᵀX‖² + 2ρ⟨D, XMᵀ⟩ + ρ²‖M‖², so the clip still acts on
the whole ∇loss as docs/algorithms.md says. Further: fp32, no compile, and a model
client_batched supports with at least one nn.Linear (`why_not`). `execution: vectorised` takes
it for all C clients at once; sequential training takes it with C = 1 where the linear layers
are large enough for it to pay (`sequential_why_not`). Otherwise both take the general path.

Every step checks, after its backward and before touching w, that the tape stands for the
linear parameters: each taped weight and bias is a parameter itself (the very view of w; a
cosine classifier's normalised weight is not) and reaches the loss only through its taped calls.
Where not (or where the client-batched forward fails or returns misshapen logits) the step
declines, w untouched, and the job takes the general path from then on (`FusedStep.declined`).
Parameters the loss never reaches (a head used only for features, a layer whose output is
dropped, an unused convolution) get a zero gradient, then weight decay, as in the plain step.
Which step a job's trainers took, and why, is in its summary.json (`local_step`: FusedStep.record,
kept per trainer by engine/trainers/base.py's LocalStepChoice).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from benchmark.engine import client_batched
from benchmark.engine.local import full_precision, overrides
from benchmark.fl.base import ClientTerm
from benchmark.fl.terms import Prox
from benchmark.job.settings import LocalTraining

# hooks that put something besides the weighted cross-entropy into the gradient or the step
SHAPES_STEP = ("adjust_logits", "loss", "direction", "grad_point", "step", "regroup")
# One client at a time the fused step pays only where model-sized passes outweigh its per-call
# overhead (the client-batched dispatch, Gram matrices): it was faster than the plain step on the
# FEMNIST CNN (6.5 M linear weights) and slower on the FEMNIST-shaped logistic (48 k); the figures
# are in benchmarks/README.md, Measurements behind code comments (benchmarks/local_step_speed.py).
ONE_CLIENT_MIN_LINEAR = 1_000_000


def why_not(model: nn.Module, terms: list[ClientTerm], precision: str = "fp32", compile: bool = False) -> str | None:
    """Why training `model` with `terms` must take the general path, or None where this step may run."""
    # the proximal term itself is folded in; a subclass of it may shape the step in other ways
    shaping = [t.name for t in terms if type(t) is not Prox and (t.needs_features or overrides(t, *SHAPES_STEP))]
    if shaping:
        return f"client term(s) {', '.join(shaping)} shape the step"
    if precision != "fp32":
        return f"precision {precision} (the fused step is fp32 only)"
    if compile:
        return "compile: true"
    if not client_batched.supports(model):
        return "a layer client_batched cannot batch (not nn.Linear/nn.Conv2d/nn.GroupNorm)"
    if not any(isinstance(m, nn.Linear) for m in model.modules()):
        return "no nn.Linear"
    return None


def prox_coefficient(terms: list[ClientTerm]) -> float:
    """ρ of the proximal terms' gradient ρ·(w − x_i) (FedProx, FedACG, FedAGM: (μ/2)‖w − x_i‖² gives μ)."""
    return sum(t.p.mu * (1.0 if t.p.halved else 2.0) for t in terms if type(t) is Prox)


def sequential_why_not(model: nn.Module, terms: list[ClientTerm], precision: str, compile: bool) -> str | None:
    """why_not for clients trained one by one, where the step must also pay (ONE_CLIENT_MIN_LINEAR)."""
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))
    if linear < ONE_CLIENT_MIN_LINEAR:
        return (
            f"{linear:,} linear weights (< {ONE_CLIENT_MIN_LINEAR:,}): one client at a time the fused step does not pay"
        )
    return why_not(model, terms, precision, compile)


def choose(
    trainer: str, model: nn.Module, spec, terms: list[ClientTerm], precision: str = "fp32", compile: bool = False
) -> FusedStep | str:
    """The fused step `trainer` ("sequential" | "vectorised") takes for `model` and `terms`, or why
    the plain step runs instead."""
    why = (sequential_why_not if trainer == "sequential" else why_not)(model, terms, precision, compile)
    return why or FusedStep(model, spec, prox_coefficient(terms))


def _grouped(calls: list[dict]) -> tuple[list[tuple], list[tuple]]:
    """([(weight, X (C, N, in), D (C, N, out))], [(bias, its gradient (C, out))]), one entry per
    distinct tensor: a weight used by several calls has their rows joined (one rank-ΣN block, so
    its norm stays exact), a bias sums its calls' gradients. A call whose output never reached the
    loss has no output gradient: zero, as the plain step's gradient there."""
    weights: dict[int, list[dict]] = {}
    biases: dict[int, tuple] = {}
    for call in calls:
        if "out_grad" not in call:
            call["out_grad"] = call["rows"].new_zeros(*call["rows"].shape[:2], call["weight"].shape[1])
        weights.setdefault(id(call["weight"]), []).append(call)
        if (bias := call["bias"]) is not None:
            _, grad = biases.get(id(bias), (bias, 0))
            biases[id(bias)] = (bias, grad + call["out_grad"].sum(1))
    join = lambda parts, key: parts[0][key] if len(parts) == 1 else torch.cat([p[key] for p in parts], 1)  # noqa: E731
    blocks = [(parts[0]["weight"], join(parts, "rows"), join(parts, "out_grad")) for parts in weights.values()]
    return blocks, list(biases.values())


def _misfit(calls: list[dict], params: dict[str, torch.Tensor], grads) -> str | None:
    """Why the tape cannot stand for the linear parameters' gradients, or None. Every taped weight
    and bias must be a parameter itself (the very view of w: a cosine classifier's normalised
    weight is a temporary, whose gradient would never reach the parameter) and reach the loss only
    through its taped calls (autograd gave it no gradient of its own)."""
    names = {id(p): n for n, p in params.items()}
    grad_of = {id(p): g for p, g in zip(params.values(), grads)}
    for call in calls:
        for role in ("weight", "bias"):
            tensor = call[role]
            if tensor is None:
                continue
            if id(tensor) not in names:
                return f"a linear layer's {role} {tuple(tensor.shape[1:])} is a computed tensor, not a parameter itself"
            if grad_of[id(tensor)] is not None:
                return f"parameter {names[id(tensor)]} reaches the loss outside nn.Linear's forward too"
    return None


class FusedStep:
    """step(w, x, y, ce_weights, local, lr, start): one local step of C clients on w (C, P) in
    place, x (C, B, ...), y (C, B), ce_weights (C,); returns the clients' losses (C,), or None
    with w untouched where the model does not fit the step (`declined` says why; from then on
    it returns None at once and the caller takes the general path). With a proximal coefficient
    ρ (prox_coefficient) the loss has ρ/2·‖w − start‖² added, start (P,) the round's start
    point, the same for every client."""

    def __init__(self, model: nn.Module, spec, prox: float = 0.0):
        self.model, self.spec, self.prox = model, spec, prox
        self.declined: str | None = None
        self.steps = 0  # fused steps taken

    def __call__(
        self,
        w: torch.Tensor,
        x: torch.Tensor,
        y: torch.Tensor,
        ce_weights: torch.Tensor,
        local: LocalTraining,
        lr: float,
        start: torch.Tensor | None = None,
    ) -> torch.Tensor | None:
        if self.declined is not None:
            return None
        losses = _fused_step_(self, w, x, y, ce_weights, local, lr, start)
        if losses is not None:
            self.steps += 1
        return losses

    def decline(self, why: str) -> None:
        self.declined = why if not self.steps else f"{why} (after {self.steps} fused steps)"

    def record(self) -> dict:
        if self.declined is None:
            return {"step": "fused", "why": "every linear layer's weight gradient applied without being formed"}
        return {"step": "plain", "why": f"the fused step declined: {self.declined}"}


def _fused_step_(step: FusedStep, w, x, y, ce_weights, local: LocalTraining, lr: float, start) -> torch.Tensor | None:
    clients, batch = y.shape
    params = step.spec.unflatten(w)
    anchors = {id(params[n]): a for n, a in step.spec.unflatten(start).items()} if step.prox else {}
    owned = [p.requires_grad_(True) for p in params.values()]  # views of w, leaves
    tape = client_batched.LinearTape(torch.zeros((), device=w.device, requires_grad=True))
    with torch.enable_grad():
        try:
            with client_batched.ClientBatched(tape):
                logits = functional_call(step.model, params, (x.flatten(0, 1),), {"features": False})
        except Exception as error:  # noqa: BLE001 - the general path may still train it (one client: no batching)
            return step.decline(f"the client-batched forward raised {type(error).__name__}: {error}")
        if (why := client_batched.logits_misfit(logits, clients, batch)) is not None:
            return step.decline(why)
        losses = (
            F.cross_entropy(full_precision(logits), y.flatten(), reduction="none").view(clients, batch).mean(1)
            * ce_weights
        )
        grads = torch.autograd.grad(losses.sum(), [*owned, tape.anchor], allow_unused=True)[:-1]
    for p in owned:
        p.requires_grad_(False)
    if (why := _misfit(tape.calls, params, grads)) is not None:
        return step.decline(why)
    blocks, biases = _grouped(tape.calls)
    taped = {id(t) for t, *_ in blocks} | {id(b) for b, _ in biases}
    # every other parameter keeps an ordinary gradient (zero where it never reached the loss, as
    # in the plain step); a bias's gradient is an ordinary one too
    kept = [(p, torch.zeros_like(p) if g is None else g) for p, g in zip(owned, grads) if id(p) not in taped]
    dense = [p for p, _ in kept] + [b for b, _ in biases]
    dense_grads = [g for _, g in kept] + [g for _, g in biases]
    with torch.no_grad():
        # the proximal gradient ρ·(w − start): added to the small gradients, kept as ρ·M beside each weight block
        gaps = [weight - anchors[id(weight)] for weight, _, _ in blocks] if step.prox else []
        if step.prox:
            dense_grads = [g.add(p - anchors[id(p)], alpha=step.prox) for p, g in zip(dense, dense_grads)]
            losses = losses.detach() + _prox_loss(step.prox, dense, anchors, gaps)
        coef = torch.full((clients,), -lr, dtype=w.dtype, device=w.device)
        if local.clip_norm is not None:
            coef = coef * _clip_factor(dense_grads, blocks, local.clip_norm, step.prox, gaps)
        keep = 1 - lr * local.weight_decay
        for (weight, rows, out_grad), gap in zip(blocks, gaps or [None] * len(blocks)):
            weight.baddbmm_((out_grad * coef.view(-1, 1, 1)).transpose(1, 2), rows, beta=keep)
            if gap is not None:
                weight.addcmul_(gap, (coef * step.prox).view(-1, 1, 1))
        for p, g in zip(dense, dense_grads):
            p.mul_(keep).add_(g * coef.view(-1, *[1] * (g.dim() - 1)))
    return losses.detach()


def _prox_loss(prox: float, dense, anchors, gaps) -> torch.Tensor:
    """ρ/2·‖w − start‖² per client (C,): Prox.loss's value, for the reported training loss."""
    squares = sum((p - anchors[id(p)]).flatten(1).pow(2).sum(1) for p in dense)
    squares = squares + sum(gap.flatten(1).pow(2).sum(1) for gap in gaps)
    return 0.5 * prox * squares


def _clip_factor(dense_grads, blocks, max_norm: float, prox: float = 0.0, gaps=()) -> torch.Tensor:
    """min(1, max_norm / (‖∇loss_c‖ + 1e-6)) per client (C,), the linear weights' blocks from Gram
    matrices; with a proximal gap M = W − start a block's gradient is DᵀX + ρM, whose square is
    ‖DᵀX‖² + 2ρ⟨D, X Mᵀ⟩ + ρ²‖M‖²."""
    squares = sum(g.flatten(1).pow(2).sum(1) for g in dense_grads)
    for i, (_, rows, out_grad) in enumerate(blocks):
        grams = torch.bmm(rows, rows.transpose(1, 2)) * torch.bmm(out_grad, out_grad.transpose(1, 2))
        block = grams.sum((1, 2))
        if gaps:
            gap = gaps[i]
            block = block + 2 * prox * (out_grad * torch.bmm(rows, gap.transpose(1, 2))).sum((1, 2))
            block = block + prox**2 * gap.flatten(1).pow(2).sum(1)
        squares = squares + block.clamp_min(0)
    return torch.clamp(max_norm / (squares.sqrt() + 1e-6), max=1.0)
