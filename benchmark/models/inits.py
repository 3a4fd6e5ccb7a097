"""A model's initial weights by name (`model.init:`): the model's own init, zeros, or N(0, 1) from the
job's own stream. A protocol or plugin registers its own (the FedAc authors' numpy draw:
protocols/fedac/suite_parts.py); reading the registry first imports benchmark/protocols/."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchmark.lazy import nn, torch
from benchmark.registry import Registry
from benchmark.rng import Stream, generator
from benchmark.suggest import unknown_name


@dataclass(frozen=True)
class Init:
    name: str
    # sets the built model's weights in place (torch.no_grad), from the job's seed
    apply: Callable[[nn.Module, int], None]


INITS: Registry[Init] = Registry("model init", "benchmark.protocols")
# the ones defined here, known without importing benchmark/protocols/ (validating a suite reads them)
BUILT_IN = ("default", "zeros", "normal")


def _zeros(model: nn.Module, seed: int) -> None:
    for p in model.parameters():
        p.zero_()


def _normal(model: nn.Module, seed: int) -> None:
    """w₀ ~ N(0, I) (FedAc), from its own stream of the job's seed."""
    gen = generator(seed, Stream.INIT)
    for p in model.parameters():
        p.copy_(torch.randn(p.shape, generator=gen))


INITS.register(Init("default", lambda model, seed: None))  # the factory's own (seeded) init
INITS.register(Init("zeros", _zeros))
INITS.register(Init("normal", _normal))


def check_init(name: str) -> str:
    """`name` when it names an init; a ValueError listing the known ones when not."""
    if name not in BUILT_IN and name not in INITS:
        raise ValueError(unknown_name("model init", name, INITS.names()))
    return name
