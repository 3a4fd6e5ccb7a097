"""`select: {on: validation, holdout: h}`: examples held out of each client's training data, on
which a grid's setting is selected instead of on the test set that the table reports.

Rule: a client with n examples holds out floor(h·n) of them, drawn by its own stream of the split
seed (the same examples for every method, setting and training seed) and trains on the rest; a
client with fewer than 1/h examples (floor(h·n) = 0) holds none out and trains on all it has
(`too_small`, recorded in summary.json). A shared split holds out h of the one training set."""

from __future__ import annotations

from dataclasses import replace

import torch

from benchmark.engine.fed_data import FederatedData
from benchmark.errors import UserError
from benchmark.rng import Stream, generator


def hold_out(data: FederatedData, holdout: float, seed: int) -> FederatedData:
    kept, held, too_small = [], [], []
    for client, rows in enumerate(data.clients[:1] if data.shared else data.clients):
        k = int(holdout * len(rows))
        if k == 0:
            too_small.append(client)
            kept.append(rows)
            continue
        order = torch.randperm(len(rows), generator=generator(seed, Stream.HOLDOUT, client))
        held.append(rows[order[:k].to(rows.device)])
        kept.append(rows[order[k:].sort().values.to(rows.device)])  # the rest, in their order
    if not held:
        raise UserError(
            f"select: holdout {holdout} holds out nothing: every client has fewer than {1 / holdout:.0f} examples"
        )
    clients = kept * data.num_clients if data.shared else kept
    return replace(data, clients=clients, validation=torch.cat(held), too_small=tuple(too_small))
