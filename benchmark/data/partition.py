"""Splitting a training set into clients. Every split is seeded on its own stream (Stream.SPLIT),
independent of training, so changing a method or a training seed never changes the clients.
"""

from __future__ import annotations

import numpy as np

from benchmark.data.source import SourceData
from benchmark.lazy import torch
from benchmark.rng import Stream, numpy_rng

SPLITTERS: dict = {}


def splitter(kind: str):
    def deco(fn):
        SPLITTERS[kind] = fn
        return fn

    return deco


@splitter("iid")
def split_iid(src: SourceData, num_clients: int, cfg, seed: int) -> list[torch.Tensor]:
    """Shuffle and deal equal shares (⌊n/N⌋ each; the remainder is left out)."""
    n = len(src.train_y)
    order = numpy_rng(seed, Stream.SPLIT).permutation(n)
    share = n // num_clients
    return [torch.from_numpy(np.sort(order[i * share : (i + 1) * share])) for i in range(num_clients)]


@splitter("dirichlet")
def split_dirichlet_balanced(src: SourceData, num_clients: int, cfg, seed: int) -> list[torch.Tensor]:
    """FedACG's balanced Dirichlet split: clients in order; client i draws p ~ Dir(α·1), every
    unassigned example gets weight p[its class], and exactly ⌊n/N⌋ examples are drawn without
    replacement by those weights."""
    rng = numpy_rng(seed, Stream.SPLIT)
    labels = src.train_y.numpy()
    n, c = len(labels), src.num_classes
    share = n // num_clients
    free = np.ones(n, dtype=bool)
    out = []
    for _ in range(num_clients):
        p = rng.dirichlet(np.full(c, cfg.alpha))
        idx = np.flatnonzero(free)
        w = p[labels[idx]]
        if w.sum() <= 0:  # every class this client likes is used up: fall back to uniform
            w = np.ones(len(idx))
        chosen = rng.choice(idx, size=share, replace=False, p=w / w.sum())
        free[chosen] = False
        out.append(torch.from_numpy(np.sort(chosen)))
    return out


MAX_REDRAWS = 1000


@splitter("dirichlet_unbalanced")
def split_dirichlet_unbalanced(src: SourceData, num_clients: int, cfg, seed: int) -> list[torch.Tensor]:
    """Hsu et al. 2019: for every class, proportions q ~ Dir(α·1_N) over the clients and the class's
    (shuffled) examples are cut by q; client sizes differ. The whole draw is repeated until every
    client has at least `cfg.min_size` examples. Not FedCM's split: its App. C.1 keeps every client
    the same size with a class mix drawn per client (`dirichlet`)."""
    rng = numpy_rng(seed, Stream.SPLIT)
    labels = src.train_y.numpy()
    if num_clients * cfg.min_size > len(labels):
        raise ValueError(f"{num_clients} clients x min_size {cfg.min_size} > {len(labels)} training examples")
    by_class = [np.flatnonzero(labels == c) for c in range(src.num_classes)]
    for _ in range(MAX_REDRAWS):
        parts: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
        for idx in by_class:
            idx = rng.permutation(idx)
            cuts = (np.cumsum(rng.dirichlet(np.full(num_clients, cfg.alpha))) * len(idx)).astype(int)[:-1]
            for client, piece in enumerate(np.split(idx, cuts)):
                parts[client].append(piece)
        clients = [np.sort(np.concatenate(p)) for p in parts]
        if min(len(c) for c in clients) >= cfg.min_size:
            return [torch.from_numpy(c) for c in clients]
    raise ValueError(
        f"dirichlet_unbalanced: no draw in {MAX_REDRAWS} gave every one of {num_clients} clients at least "
        f"min_size = {cfg.min_size} examples at alpha = {cfg.alpha}; raise alpha or lower min_size / num_clients"
    )


@splitter("natural")
def split_natural(src: SourceData, num_clients: int, cfg, seed: int) -> list[torch.Tensor]:
    """One client per natural user (LEAF): the first N users, or N users drawn at random."""
    if src.train_users is None:
        raise ValueError("this dataset has no natural users; use split kind iid or dirichlet")
    num_users = int(src.train_users.max()) + 1
    if num_clients > num_users:
        raise ValueError(f"num_clients = {num_clients} but the dataset has only {num_users} users")
    if cfg.select == "random":
        users = np.sort(numpy_rng(seed, Stream.SPLIT).choice(num_users, num_clients, replace=False))
    else:
        users = np.arange(num_clients)
    order = torch.argsort(src.train_users, stable=True)
    counts = torch.bincount(src.train_users, minlength=num_users)
    starts = torch.cumsum(counts, 0) - counts
    return [order[starts[u] : starts[u] + counts[u]] for u in users.tolist()]


@splitter("shared")
def split_shared(src: SourceData, num_clients: int, cfg, seed: int) -> list[torch.Tensor]:
    """Every client holds the whole training set (one tensor, not N copies); batches are drawn
    with replacement (FedAc's stochastic-approximation setting, engine/fed_data.py)."""
    everything = torch.arange(len(src.train_y))
    return [everything] * num_clients


def partition(src: SourceData, num_clients: int, cfg) -> list[torch.Tensor]:
    return SPLITTERS[cfg.kind](src, num_clients, cfg, cfg.seed)


def packed_partition(src: SourceData, num_clients: int, cfg) -> dict[str, torch.Tensor]:
    """`partition` as the split cache stores it: every client's indices end to end, and their sizes."""
    parts = partition(src, num_clients, cfg)
    return {"indices": torch.cat(parts), "sizes": torch.tensor([len(p) for p in parts])}
