"""Model registry.

Every model is buffer-free (GroupNorm, never BatchNorm: the flat parameter vector is the whole
state) and implements `forward(x, features=False)`, returning logits, or (logits, penultimate
features) when `features` is true.

Models that support FedMLB's hybrid paths also take two keyword arguments:
  forward(x, stages=True)  -> (logits, [output of stage 0, ..., output of stage L-1])
  forward(h, start=k)      -> logits, where h is the output of stage k-1 (runs stages k.. + head)
and expose `num_stages` (L). ResNet-18: L = 5 (stem, 4 residual stages).
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from benchmark.registry import discover
from benchmark.rng import Stream, generator

MODELS: dict[str, Callable[..., nn.Module]] = {}
# What a model offers beyond logits, checked against the client terms' `model_traits` when a suite
# is validated: "features" = a learned penultimate layer (MOON, FedDecorr act on it; a model
# without one returns its input, on which those terms are constant), "stages" = the stage protocol.
MODEL_TRAITS: dict[str, frozenset[str]] = {}


def register_model(name: str, traits: tuple[str, ...] = ()):
    def deco(factory):
        if name in MODELS:
            raise ValueError(f"model {name!r} registered twice")
        MODELS[name] = factory
        MODEL_TRAITS[name] = frozenset(traits)
        return factory

    return deco


def known_models() -> list[str]:
    discover("benchmark.models")  # every model file registers itself

    return sorted(MODELS)


def build_model(name: str, input_shape: tuple[int, ...], num_classes: int, params: dict, init: str, seed: int) -> nn.Module:
    """Build model `name`; weights come from a generator seeded by `seed` (identical for every method)."""
    discover("benchmark.models")

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = MODELS[name](input_shape=input_shape, num_classes=num_classes, **params)
    if init == "zeros":
        with torch.no_grad():
            for p in model.parameters():
                p.zero_()
    elif init == "normal":  # w₀ ~ N(0, I) (FedAc), from its own stream of the job's seed
        gen = generator(seed, Stream.INIT)
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn(p.shape, generator=gen))
    return model
