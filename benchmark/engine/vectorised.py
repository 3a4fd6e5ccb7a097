"""Train one round's clients together, on their stacked flat parameters (C, P).

The forward runs client-batched on native kernels (engine/client_batched.py: batched matmul,
grouped convolution, GroupNorm per client slice) when the model's layers allow it, and one
backward of the clients' summed losses gives every client's gradient; the terms' losses and
the cross-entropy run per client under torch.func.vmap. Other models take the whole gradient
under vmap. The step then updates the (C, P) matrix in place, row by row the sequential step
(local.py's sgd_step_ / descent_direction_; a term's direction rewrite per client). Where no
term shapes the step (FedAvg, FedAvgM, FedAdam, FedPAQ; and the proximal term of FedProx, FedACG,
FedAGM), engine/low_rank_step.py's fused step
replaces gradient and update: the linear layers' weight gradients are applied without being formed.

The same numbers as the sequential trainer (up to float reduction order): the step
math is `engine/local.py`'s (objective, descent direction, rewrite_direction), the lr the round's
schedule's, each client gets the batches of its own (seed, round, client) stream, and terms' begin /
ce_weight / direction / finish run per client on that client's real context. Per-client tensors the loss
reads (a term's `scratch_inputs`, set by its begin) are stacked and sliced by vmap.

Which rounds can train this way, and the chunking by `vmap_chunk`, are the vectorised trainer's
(engine/trainers/vectorised.py); this module is its arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch.func import grad_and_value, vmap

from benchmark.engine import client_batched
from benchmark.engine.fed_data import as_is
from benchmark.engine.local import (
    ce_weight_of,
    descent_direction_,
    objective,
    overrides,
    rewrite_direction,
    set_step_budget,
    sgd_step_,
    step_loss,
)
from benchmark.engine.low_rank_step import FusedStep
from benchmark.engine.round_tally import SILENT, RoundTally
from benchmark.engine.trainers.base import ClientOutcome
from benchmark.engine.training_setup import Positions, TrainingSetup
from benchmark.fl.base import ClientContext, ClientTerm, ForwardOut, RoundInfo


def _step_inputs(
    setup: TrainingSetup, chosen: list[int], rnd: RoundInfo, positions: list[Positions]
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """(x (C, B, ...), y (C, B)) per local step, step by step: each client's batches of data.client_batches.

    Where the preprocessing is the identity (vectors, tokens: no per-client augmentation stream),
    a step's batches are gathered at once (one index per step, not one per client plus a stack,
    which took a large share of a small model's step: benchmarks/README.md)."""
    data = setup.data
    if data.preprocess is not as_is:
        batches = [setup.client_batches(rnd.round, cid) for cid in chosen]
        for step in zip(*batches):
            yield torch.stack([b.x for b in step]), torch.stack([b.y for b in step])
        return
    owned = [data.clients[cid] for cid in chosen]
    if data.shared:  # every client indexes the same rows
        joined, starts = owned[0], 0
    else:  # the chosen clients' example indices, one after another
        joined = torch.cat(owned)
        starts = torch.tensor([0] + [len(i) for i in owned[:-1]], device=joined.device).cumsum(0).unsqueeze(1)
    for step in zip(*positions):
        rows = joined[torch.stack([p for p, _ in step]).to(joined.device) + starts]  # (C, B)
        x = data.src.train_x.index_select(0, rows.flatten())  # faster than train_x[rows] on CPU (benchmarks/README.md)
        yield x.view(*rows.shape, *x.shape[1:]), data.src.train_y[rows]


def _shared_context(
    template: ClientContext, received: dict[str, torch.Tensor], scratch: dict[str, torch.Tensor]
) -> ClientContext:
    """What a vmappable term sees inside vmap: this client's slice of `received` and of the terms'
    `scratch_inputs`, the round, K.

    Other per-client data (id, state, counts, other scratch) is deliberately absent (see ClientTerm.vmappable).
    """
    return ClientContext(
        client_id=-1,
        rnd=template.rnd,
        received=received,
        num_samples=0,
        forward=template.forward,
        state={},
        class_counts=torch.empty(0, dtype=torch.long),
        total_samples=template.total_samples,
        steps=template.steps,
        scratch=scratch,
    )


def stack_scratch_inputs(ctxs: list[ClientContext], terms: list[ClientTerm]) -> dict[str, torch.Tensor]:
    """name -> (C, ...) for every term's `scratch_inputs`, row i from client i's scratch (after begin)."""
    stacked = {}
    for term in terms:
        for name in term.scratch_inputs:
            values = [ctx.scratch.get(name) for ctx in ctxs]
            if not all(isinstance(v, torch.Tensor) for v in values):
                raise TypeError(
                    f"client term {term.name!r} declares scratch input {name!r}, "
                    "but its begin did not put a tensor there for every client"
                )
            stacked[name] = torch.stack(values)
    return stacked


def _vmapped_gradient(template: ClientContext, terms: list[ClientTerm]) -> Callable:
    """(W, received, scratch, ce_weights, X, Y) -> (gradients (C, P), losses (C,)), one vmapped call."""
    needs_features = any(t.needs_features for t in terms)

    def one_client(w, received, scratch, ce_weight, x, y):
        ctx = _shared_context(template, received, scratch)
        return grad_and_value(lambda v: step_loss(ctx, terms, v, x, y, ce_weight, needs_features))(w)

    return vmap(one_client)


def _client_batched_gradient(template: ClientContext, terms: list[ClientTerm]) -> Callable:
    """The same function, its forward on native client-batched kernels and its gradient by one
    backward of the clients' summed losses (client i's loss depends on row i of W only); the
    terms' losses and the cross-entropy, per client, under vmap."""
    needs_features = any(t.needs_features for t in terms)

    def one_objective(w, received, scratch, ce_weight, logits, features, x, y):
        ctx = _shared_context(template, received, scratch)
        return objective(ctx, terms, w, ForwardOut(logits, features), x, y, ce_weight)

    objectives = vmap(one_objective, in_dims=(0, 0, 0, 0, 0, 0 if needs_features else None, 0, 0))

    def gradient(w, received, scratch, ce_weights, x, y):
        with torch.enable_grad():
            w = w.detach().requires_grad_(True)
            logits, features = client_batched.batched_forward(template.forward, w, x, needs_features)
            losses = objectives(w, received, scratch, ce_weights, logits, features, x, y)
            (grad,) = torch.autograd.grad(losses.sum(), w)
        return grad, losses.detach()

    return gradient


@torch.no_grad()  # torch.func.grad still differentiates inside; this only keeps W out of autograd
def train_together(
    setup: TrainingSetup,
    chosen: list[int],
    rnd: RoundInfo,
    received: dict[str, torch.Tensor],
    positions: list[Positions],
    fused: FusedStep | None,
    tally: RoundTally = SILENT,
) -> list[ClientOutcome]:
    """Train `chosen` at once; every client takes the same steps (the trainer checked `positions`).
    `fused`: engine/low_rank_step's step where it applies, else None (the general path); `tally`
    counts each step (of every client)."""
    terms, local = setup.method.terms, setup.local
    epochs, count = [e for _, e in positions[0]], len(chosen)
    ctxs = [setup.client_context(cid, rnd, received) for cid in chosen]
    for ctx in ctxs:
        set_step_budget(ctx, epochs)
        for term in terms:
            term.begin(ctx)
    ce_weights = torch.tensor([ce_weight_of(ctx, terms) for ctx in ctxs], device=setup.device)
    scratch = stack_scratch_inputs(ctxs, terms)
    # one broadcast reaches every client: expanded views, no copies (a per-client start would be stacked)
    per_client = {k: v.expand(count, *v.shape) for k, v in received.items()}
    make_gradient = _client_batched_gradient if client_batched.supports(setup.model) else _vmapped_gradient
    gradient = make_gradient(ctxs[0], terms)
    rewriters = [t for t in terms if overrides(t, "direction")]

    w = per_client["model"].clone(memory_format=torch.contiguous_format)
    decay = torch.empty_like(w) if rewriters and local.weight_decay else None
    losses = []
    for (x, y), epoch in zip(_step_inputs(setup, chosen, rnd, positions), epochs):
        lr = rnd.step_lr(epoch)
        if fused:  # no term shapes the step: the linear layers' gradients go straight into w
            loss = fused(w, x, y, ce_weights, local, lr, received["model"])
            if loss is not None:
                losses.append(loss)
                tally.step(count)
                continue
            fused = None  # it declined (w untouched): the general path from here on
        grad, loss = gradient(w, per_client, scratch, ce_weights, x, y)
        if rewriters:  # per client, on its own context, like the sequential path
            g = descent_direction_(grad, w, local, decay)
            g = torch.stack([rewrite_direction(ctx, rewriters, w[i], g[i]) for i, ctx in enumerate(ctxs)])
            w.sub_(g.mul_(lr))
        else:  # every row of the (C, P) matrix at once, as local.py's sequential step
            sgd_step_(w, grad, local, lr)
        losses.append(loss)
        tally.step(count)
    mean_losses = torch.stack(losses).mean(0).tolist() if losses else [float("nan")] * count
    outcomes = []
    for i, (cid, ctx) in enumerate(zip(chosen, ctxs)):
        for term in terms:
            term.finish(ctx, w[i])
        outcomes.append(ClientOutcome(cid, ctx.start, w[i], ctx.messages, ctx.state, ctx.lr_sum, mean_losses[i]))
    return outcomes
