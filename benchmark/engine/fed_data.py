"""A split dataset living on the training device: whole tensors plus per-client index tensors.

Batches are gathered by index on the device; their order comes from the (seed, round, client)
stream, so every method and execution mode sees the same batches.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from benchmark.data.source import SourceData
from benchmark.errors import UserError
from benchmark.job.settings import LocalTraining
from benchmark.lazy import torch  # the FedAc engine draws its samples here without torch
from benchmark.rng import Stream, derive_seed, generator
from benchmark.torch_streams import TorchGenerator

# kind -> fn(x, train, gen) -> float tensor; image pipelines register augmentation here
Preprocessor = Callable[["torch.Tensor", bool, "torch.Generator | None"], "torch.Tensor"]


def as_is(x: torch.Tensor, train: bool, gen: torch.Generator | None) -> torch.Tensor:
    return x


def default_preprocess(src: SourceData) -> Preprocessor:
    """Vectors and token sequences go to the model as they are (`as_is`: the vectorised trainer
    then gathers all clients' batches at once); images (kind "image") get the device-side
    pipeline of engine/augment.py, named in engine.setup.PREPROCESSORS."""
    if src.kind == "image":
        raise ValueError("image sources use the preprocessor registered for kind 'image' (benchmark.engine.augment)")
    return as_is


@functools.lru_cache(maxsize=2)
def shared_rows(seed: int, rnd: int, num_clients: int, steps: int, batch_size: int, n: int) -> np.ndarray:
    """(clients, steps, batch) example indices of one round of a shared split, drawn uniformly
    with replacement in one call, so the per-client path and the batched FedAc engine
    (protocols/fedac/engine.py) see the very same examples: torch.randint's draw on the round's
    generator, drawn without torch (benchmark/torch_streams.py)."""
    gen = TorchGenerator(derive_seed(seed, Stream.BATCHES, rnd))
    return gen.randint(n, (num_clients, steps, batch_size))


def shared_positions(seed: int, rnd: int, num_clients: int, steps: int, batch_size: int, n: int) -> torch.Tensor:
    return torch.from_numpy(shared_rows(seed, rnd, num_clients, steps, batch_size, n))


def authors_positions(seed: int, w0_size: int, rnd: int, num_clients: int, steps: int, batch_size: int, n: int):
    """(clients, steps, batch) example indices of one round as the FedAc authors' logistic.py draws
    them (`split.samples: authors_numpy`): `np.random.seed(seed)`, w0 = `randn(w0_size)`, then per
    local step `choice(n, batch·M)` (worker m's s-th example at s·M + m), or per round of the
    minibatch methods `choice(n, M·K·batch)` (the same examples: legacy integers use whole 32-bit
    words, so consecutive draws continue one stream)."""
    return _authors_stream(seed, w0_size, n, num_clients, steps, batch_size).round(rnd)


class _AuthorsStream:
    """numpy's legacy generator past w0, one round's draw at a time (M = 8,192: 33.5M indices in
    all); rounds are asked for in order (both paths), an earlier one replays from the seed."""

    def __init__(self, seed: int, w0_size: int, n: int, clients: int, steps: int, batch_size: int):
        self.start, self.n, self.shape = (seed, w0_size), n, (steps, batch_size, clients)
        self.rewind()

    def rewind(self) -> None:
        self.gen = np.random.RandomState(self.start[0])
        self.gen.randn(self.start[1])
        self.last, self.drawn = -1, None

    def round(self, rnd: int) -> np.ndarray:
        if rnd < self.last:
            self.rewind()
        while self.last < rnd:
            self.drawn, self.last = self.gen.randint(0, self.n, self.shape), self.last + 1
        return self.drawn.transpose(2, 0, 1)


@functools.lru_cache(maxsize=2)
def _authors_stream(seed: int, w0_size: int, n: int, clients: int, steps: int, batch_size: int) -> _AuthorsStream:
    return _AuthorsStream(seed, w0_size, n, clients, steps, batch_size)


@dataclass
class Batch:
    x: torch.Tensor
    y: torch.Tensor
    epoch: int


@dataclass
class FederatedData:
    src: SourceData
    clients: list[torch.Tensor]  # index tensors into src.train_*
    preprocess: Preprocessor
    fingerprint: str = ""  # of the source tensors (engine.setup.data_fingerprint); recorded in summary.json
    shared: bool = False  # split kind shared: every client samples with replacement from all data
    validation: torch.Tensor | None = None  # rows of src.train_* held out to select on (engine/holdout.py)
    too_small: tuple[int, ...] = ()  # clients with too few examples to hold any out
    authors_w0_size: int | None = None  # shared split drawn by `authors_positions` after a w0 of this size

    @property
    def num_clients(self) -> int:
        return len(self.clients)

    def sizes(self) -> torch.Tensor:
        return torch.tensor([len(c) for c in self.clients], dtype=torch.float64)

    def class_counts(self, client: int) -> torch.Tensor:
        return torch.bincount(self.src.train_y[self.clients[client]], minlength=self.src.num_classes)

    def to(self, device) -> FederatedData:
        s = self.src
        moved = replace(
            s,
            train_x=s.train_x.to(device),
            train_y=s.train_y.to(device),
            test_x=s.test_x.to(device),
            test_y=s.test_y.to(device),
            test_users=None if s.test_users is None else s.test_users.to(device),
        )
        # shared: one index tensor for every client, not N copies
        clients = (
            [self.clients[0].to(device)] * self.num_clients if self.shared else [c.to(device) for c in self.clients]
        )
        validation = None if self.validation is None else self.validation.to(device)
        return replace(self, src=moved, clients=clients, validation=validation)

    def training_rows(self) -> torch.Tensor:
        """Every training example the federation holds (once each)."""
        return self.clients[0] if self.shared else torch.cat(list(self.clients))

    def batch_positions(self, seed: int, rnd: int, client: int, local: LocalTraining) -> list[tuple[torch.Tensor, int]]:
        """(positions into the client's index tensor, epoch) per local step."""
        n = len(self.clients[client])
        if self.shared:
            if local.steps is None:
                raise UserError(
                    "split kind 'shared' samples with replacement, so it has no epochs: "
                    "set local.steps (and local.batch_size) instead of local.epochs"
                )
            shape = (self.num_clients, local.steps, local.batch_size, n)
            if self.authors_w0_size is None:
                drawn = shared_positions(seed, rnd, *shape)[client]
            else:
                drawn = torch.from_numpy(authors_positions(seed, self.authors_w0_size, rnd, *shape)[client])
            return [(pos, 0) for pos in drawn]
        gen = generator(seed, Stream.BATCHES, rnd, client)
        b = min(local.batch_size, n)
        if local.epochs is not None:
            out = []
            for epoch in range(local.epochs):
                perm = torch.randperm(n, generator=gen)
                out += [(perm[i : i + b], epoch) for i in range(0, n, b)]
            return out
        out, step = [], 0
        while len(out) < local.steps:
            perm = torch.randperm(n, generator=gen)
            for i in range(0, n - b + 1, b):  # full batches only, so every step sees b examples
                if len(out) == local.steps:
                    break
                out.append((perm[i : i + b], (step * b) // n))
                step += 1
        return out

    def client_batches(self, seed: int, rnd: int, client: int, local: LocalTraining) -> list[Batch]:
        idx = self.clients[client]
        gen = generator(seed, Stream.AUGMENT, rnd, client, device=self.src.train_x.device)
        out = []
        for pos, epoch in self.batch_positions(seed, rnd, client, local):
            rows = idx[pos.to(idx.device)]
            # the rows of train_x[rows], faster on CPU (benchmarks/README.md)
            x = self.src.train_x.index_select(0, rows)
            out.append(Batch(self.preprocess(x, True, gen), self.src.train_y[rows], epoch))
        return out
