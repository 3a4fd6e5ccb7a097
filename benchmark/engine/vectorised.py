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

Same contract and same numbers as `train_sequential` (up to float reduction order): the step
math is `engine/local.py`'s (objective, descent direction, rewrite_direction), the lr the round's
schedule's, each client gets the batches of its own (seed, round, client) stream, and terms' begin /
ce_weight / direction / finish run per client on that client's real context. Per-client tensors the loss
reads (a term's `scratch_inputs`, set by its begin) are stacked and sliced by vmap.

A round is vectorisable when every chosen client takes the same number of steps with the same
batch size at each step (balanced splits) and every client term is `vmappable`. Otherwise the
job fails with `NotVectorisable`, never silently falling back to sequential training
(`execution: auto` checks first, with `blocker`, and trains such rounds sequentially).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch.func import grad_and_value, vmap

from benchmark.engine import client_batched, low_rank_step
from benchmark.engine.client_round import ClientOutcome, make_context
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
from benchmark.errors import UserError
from benchmark.fl.base import ClientContext, ClientTerm, ForwardOut, RoundInfo
from benchmark.suite.schema import LocalTraining

ADVICE = (
    "set `execution: sequential` (or `auto`, which trains such rounds sequentially) for this job "
    "(in the suite's defaults or its dataset entry)"
)


class NotVectorisable(UserError):
    """A job asked for `execution: vectorised` but its rounds cannot be trained under vmap."""


def check_terms(terms: list[ClientTerm]) -> None:
    blocked = [t.name for t in terms if not t.vmappable]
    if blocked:
        raise NotVectorisable(
            f"execution: vectorised: client term(s) {', '.join(map(repr, blocked))} are not vmappable "
            f"(their loss reads per-client data or is not a pure tensor function); {ADVICE}"
        )


def _plan(sizes: list[int], epochs: list[int], local: LocalTraining) -> tuple:
    """What must agree across clients: batch size per step (and epoch per step when it sets the lr)."""
    return (tuple(sizes), tuple(epochs)) if local.intra_round_decay else (tuple(sizes),)


def _positions_plan(steps: list[tuple[torch.Tensor, int]], local: LocalTraining) -> tuple:
    return _plan([len(p) for p, _ in steps], [e for _, e in steps], local)


def round_positions(sim, chosen: list[int], rnd: RoundInfo) -> list[list[tuple[torch.Tensor, int]]]:
    """Each chosen client's data.batch_positions in round `rnd`."""
    return [sim.data.batch_positions(sim.job.seed, rnd.round, cid, sim.job.local) for cid in chosen]


def blocker(sim, rnd: RoundInfo, positions: list[list[tuple[torch.Tensor, int]]]) -> str | None:
    """Why the clients of `positions` (round_positions) cannot train vectorised in this round, or
    None. Decided from the terms and the batch positions alone (no batch gathered, no term begun),
    so a caller can still go sequential."""
    try:
        check_terms(sim.method.terms)
    except NotVectorisable as e:
        return str(e)
    plans = {_positions_plan(steps, sim.job.local) for steps in positions}
    return None if len(plans) <= 1 else f"round {rnd.round}: clients take different local steps or batch sizes"


def _describe(cid: int, steps: list[tuple[torch.Tensor, int]]) -> str:
    return f"client {cid}: {len(steps)} steps, batch sizes {sorted({len(p) for p, _ in steps})}"


def check_plans(
    chosen: list[int], positions: list[list[tuple[torch.Tensor, int]]], local: LocalTraining, rnd: int
) -> None:
    """`positions`: each client's data.batch_positions."""
    first = _positions_plan(positions[0], local)
    for cid, steps in zip(chosen, positions):
        if _positions_plan(steps, local) != first:
            raise NotVectorisable(
                f"execution: vectorised needs every client of a round to take the same local steps with the "
                f"same batch sizes{' and epochs' if local.intra_round_decay else ''}; in round {rnd} "
                f"{_describe(chosen[0], positions[0])} but {_describe(cid, steps)} (unbalanced split?); {ADVICE}"
            )


def _step_inputs(
    sim, chosen: list[int], rnd: RoundInfo, positions: list
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """(x (C, B, ...), y (C, B)) per local step, step by step: each client's batches of data.client_batches.

    Where the preprocessing is the identity (vectors, tokens: no per-client augmentation stream),
    a step's batches are gathered at once (one index per step, not one per client plus a stack:
    a quarter of a FEMNIST-shaped logistic step at 50 clients)."""
    data, job = sim.data, sim.job
    if data.preprocess is not as_is:
        batches = [data.client_batches(job.seed, rnd.round, cid, job.local) for cid in chosen]
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
        x = data.src.train_x.index_select(0, rows.flatten())  # 3x the speed of train_x[rows] on CPU
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
def _train_together(
    sim, chosen: list[int], rnd: RoundInfo, received: dict, positions: list | None = None
) -> list[ClientOutcome]:
    terms, local = sim.method.terms, sim.job.local
    positions = positions or round_positions(sim, chosen, rnd)
    check_plans(chosen, positions, local, rnd.round)
    epochs, count = [e for _, e in positions[0]], len(chosen)
    ctxs = [make_context(sim, cid, rnd, received) for cid in chosen]
    for ctx in ctxs:
        set_step_budget(ctx, epochs)
        for term in terms:
            term.begin(ctx)
    ce_weights = torch.tensor([ce_weight_of(ctx, terms) for ctx in ctxs], device=sim.device)
    scratch = stack_scratch_inputs(ctxs, terms)
    # one broadcast reaches every client: expanded views, no copies (a per-client start would be stacked)
    per_client = {k: v.expand(count, *v.shape) for k, v in received.items()}
    fused = low_rank_step.for_job(sim, "vectorised")
    make_gradient = _client_batched_gradient if client_batched.supports(sim.model) else _vmapped_gradient
    gradient = make_gradient(ctxs[0], terms)
    rewriters = [t for t in terms if overrides(t, "direction")]

    w = per_client["model"].clone(memory_format=torch.contiguous_format)
    decay = torch.empty_like(w) if rewriters and local.weight_decay else None
    losses = []
    for (x, y), epoch in zip(_step_inputs(sim, chosen, rnd, positions), epochs):
        lr = rnd.step_lr(epoch)
        if fused:  # no term shapes the step: the linear layers' gradients go straight into w
            loss = fused(w, x, y, ce_weights, local, lr, received["model"])
            if loss is not None:
                losses.append(loss)
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
    mean_losses = torch.stack(losses).mean(0).tolist() if losses else [float("nan")] * count
    outcomes = []
    for i, (cid, ctx) in enumerate(zip(chosen, ctxs)):
        for term in terms:
            term.finish(ctx, w[i])
        outcomes.append(ClientOutcome(cid, ctx.start, w[i], ctx.messages, ctx.state, ctx.lr_sum, mean_losses[i]))
    return outcomes


def train_vectorised(
    sim,
    chosen: list[int],
    rnd: RoundInfo,
    received: dict,
    max_clients_per_vmap: int | None = None,
    positions: list | None = None,
) -> list[ClientOutcome]:
    """Train `chosen` under vmap, at most `max_clients_per_vmap` at a time (bounds memory);
    `positions`: their round_positions where the caller has them already."""
    check_terms(sim.method.terms)
    client_batched.keep_freed_memory()
    chunk = max_clients_per_vmap or len(chosen)
    outcomes: list[ClientOutcome] = []
    for i in range(0, len(chosen), chunk):
        outcomes += _train_together(sim, chosen[i : i + chunk], rnd, received, positions and positions[i : i + chunk])
    return outcomes


def train_vectorised_job(
    sim, chosen: list[int], rnd: RoundInfo, received: dict, positions: list | None = None
) -> list[ClientOutcome]:
    """The `execution: vectorised` trainer: chunks of the job's `vmap_chunk` clients (None: all at once)."""
    return train_vectorised(sim, chosen, rnd, received, sim.job.vmap_chunk, positions)
