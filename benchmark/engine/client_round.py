"""Train one round's participating clients, one after another (the reference execution).

`engine/vectorised.py` offers the same contract for training them together under vmap;
both must give the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from benchmark.engine import low_rank_step
from benchmark.engine.local import train_client
from benchmark.fl.base import ClientContext, RoundInfo


@dataclass
class ClientOutcome:
    client_id: int
    start: torch.Tensor  # x_i: the model this client received
    final: torch.Tensor  # w_K
    messages: dict[str, torch.Tensor]  # extra uplink messages (besides delta = w_K − x_i)
    state: dict[str, torch.Tensor]  # its persistent state after the round
    lr_sum: float  # Σ_k η_k over its steps
    loss: float  # mean training loss over its steps


def make_context(sim, cid: int, rnd: RoundInfo, received: dict) -> ClientContext:
    return ClientContext(
        client_id=cid,
        rnd=rnd,
        received=received,
        num_samples=int(sim.sizes[cid]),
        forward=sim.forward,
        state=sim.clients.get(cid, sim.device),
        class_counts=sim.data.class_counts(cid),
        total_samples=int(sim.sizes.sum()),
    )


def train_sequential(sim, chosen: list[int], rnd: RoundInfo, received: dict) -> list[ClientOutcome]:
    job, outcomes = sim.job, []
    low_rank = low_rank_step.for_job(sim, "sequential")
    for cid in chosen:
        ctx = make_context(sim, cid, rnd, received)
        batches = sim.data.client_batches(job.seed, rnd.round, cid, job.local)
        w, loss = train_client(ctx, sim.method.terms, batches, job.local, low_rank)
        outcomes.append(ClientOutcome(cid, ctx.start, w, ctx.messages, ctx.state, ctx.lr_sum, loss))
    return outcomes
