"""Shared by the vectorised-execution tests: tiny jobs, a tiny image setup, and the parity check.

Tolerance: see test_vectorised.py's docstring.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
import torch
from torch import nn

from benchmark.data.source import SourceData
from benchmark.engine import vectorised
from benchmark.engine.fed_data import FederatedData, default_preprocess
from benchmark.engine.setup import build_simulation
from benchmark.engine.simulation import Simulation
from benchmark.engine.trainers.base import ClientOutcome, ExecutionRecord
from benchmark.engine.trainers.sequential import SequentialTrainer
from benchmark.engine.trainers.vectorised import VectorisedTrainer
from benchmark.fl.base import ClientTerm
from benchmark.suite.expand import expand
from benchmark.suite.schema import Suite

ATOL = 1e-5


def make_jobs(methods: list, split=None, local=None, max_samples=60, **defaults):
    suite = Suite(
        name="vec",
        defaults={
            "rounds": 3,
            "num_clients": 10,
            "participation": {"mode": "fixed", "rate": 0.4},
            "local": {
                "epochs": 1,
                "batch_size": 8,
                "lr": 0.05,
                "lr_decay": 0.99,
                "weight_decay": 1e-3,
                "clip_norm": 1.0,
                **(local or {}),
            },
            "model": {"name": "logistic"},
            **defaults,
        },
        datasets=[
            {
                "name": "synthetic",
                "params": {"num_users": 10, "dim": 12, "num_classes": 4, "max_samples": max_samples},
                "split": split or {"kind": "iid"},
            }
        ],
        methods=methods,
    )
    return expand(suite)


def sequential_outcomes(sim: Simulation, chosen: list[int], rnd, received: dict) -> list[ClientOutcome]:
    """One round's `chosen` clients trained by the sequential trainer (client states not stored)."""
    return SequentialTrainer(sim.setup).train(chosen, rnd, received, ExecutionRecord()).outcomes


def vectorised_outcomes(sim: Simulation, chosen: list[int], rnd, received: dict, vmap_chunk: int | None = None):
    """The same by the vectorised trainer, at most `vmap_chunk` clients per call (None: chosen from memory)."""
    setup = replace(sim.setup, vmap_chunk=vmap_chunk)
    return VectorisedTrainer(setup).train(chosen, rnd, received, ExecutionRecord()).outcomes


def run(config, execution: str, sim_factory=build_simulation, **update):
    sim = sim_factory(config.model_copy(update={"execution": execution, **update}))
    records = sim.run()
    return sim, records


def with_term(term: ClientTerm) -> Callable[..., Simulation]:
    """A simulation factory that appends `term` to the method's client terms."""

    def factory(config):
        sim = build_simulation(config)
        sim.setup.method.terms.append(term)
        return sim

    return factory


def assert_same(config, sim_factory=build_simulation):
    """The vectorised trainer against the sequential one taking the plain local step (the reference)."""
    seq, seq_records = run(config, "sequential", sim_factory)
    assert seq.execution.local_step["sequential"]["step"] == "plain"
    vec, vec_records = run(config, "vectorised", sim_factory)
    torch.testing.assert_close(vec.progress.theta, seq.progress.theta, atol=ATOL, rtol=0)
    for key, value in seq.progress.server_state.items():
        torch.testing.assert_close(vec.progress.server_state[key], value, atol=ATOL, rtol=0)
    assert len(vec_records) == len(seq_records) == config.rounds
    for v, s in zip(vec_records, seq_records):
        assert v.keys() == s.keys()
        for key in s:
            assert v[key] == pytest.approx(s[key], abs=ATOL, rel=0), key
    for cid in range(config.num_clients):
        assert (cid in vec.setup.clients) == (cid in seq.setup.clients)
        if cid in seq.setup.clients:
            seq_state, vec_state = seq.setup.clients.get(cid, "cpu"), vec.setup.clients.get(cid, "cpu")
            assert vec_state.keys() == seq_state.keys()
            for key, value in seq_state.items():
                torch.testing.assert_close(vec_state[key], value, atol=ATOL, rtol=0)
    return seq, vec


class TinyCNN(nn.Module):
    """Conv + GroupNorm + pooling + linear head, with penultimate features (buffer-free)."""

    def __init__(self, num_classes: int = 4):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.norm = nn.GroupNorm(2, 4)
        self.fc1 = nn.Linear(4 * 4 * 4, 16)
        self.fc2 = nn.Linear(16, num_classes)

    def forward(self, x, features: bool = False):
        h = torch.max_pool2d(torch.relu(self.norm(self.conv(x))), 2)
        z = torch.relu(self.fc1(h.flatten(1)))
        logits = self.fc2(z)
        return (logits, z) if features else logits


def image_simulation(
    config, dtype: torch.dtype = torch.float32, model: Callable[[], nn.Module] = TinyCNN
) -> Simulation:
    """Random 1x8x8 images (4 classes) for `model` (TinyCNN by default), already normalised floats in `dtype`.

    Source kind "vector" hands them to the model as they are, so no image pipeline is involved.
    """
    gen = torch.Generator().manual_seed(0)

    def images(n: int) -> torch.Tensor:
        return (torch.randint(0, 256, (n, 1, 8, 8), generator=gen).to(dtype) / 255 - 0.5) / 0.25

    src = SourceData(
        train_x=images(120),
        train_y=torch.randint(0, 4, (120,), generator=gen),
        test_x=images(40),
        test_y=torch.randint(0, 4, (40,), generator=gen),
        num_classes=4,
        kind="vector",
    )
    clients = list(torch.randperm(120, generator=gen).view(10, 12))
    torch.manual_seed(1)
    return Simulation(config, FederatedData(src, clients, default_preprocess(src)), model().to(dtype))


def chunk_sizes(monkeypatch) -> list[int]:
    """The number of clients of every call of vectorised.train_together from now on."""
    sizes = []
    train_together = vectorised.train_together
    monkeypatch.setattr(
        vectorised,
        "train_together",
        lambda setup, chosen, *a: sizes.append(len(chosen)) or train_together(setup, chosen, *a),
    )
    return sizes
