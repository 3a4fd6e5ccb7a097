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

import importlib
from dataclasses import dataclass

from benchmark.lazy import nn, torch
from benchmark.models.inits import INITS
from benchmark.plugins import withdrawable
from benchmark.registry import check_new, load_installed, registering_module


@dataclass(frozen=True)
class ModelEntry:
    factory: str  # "module:function" building the nn.Module, imported (with torch) only to build it
    # What the model offers beyond logits, checked against the client terms' `model_traits` when a
    # suite is validated: "features" = a learned penultimate layer (MOON, FedDecorr act on it; a
    # model without one returns its input, on which those terms are constant), "stages" = the
    # stage protocol.
    traits: frozenset[str] = frozenset()


MODELS: dict[str, ModelEntry] = {}
ORIGINS: dict[str, str] = {}  # name -> the module that registered it
withdrawable(ORIGINS, MODELS.pop)


def register_model(name: str, factory: str, traits: tuple[str, ...] = ()) -> None:
    """Name a model: `factory` is "module:function" (a plugin's own module may be named)."""
    check_new("model", name, ORIGINS, registering_module())
    MODELS[name] = ModelEntry(factory, frozenset(traits))


# A model is one file defining its nn.Module and a factory; it is named here rather than by a
# decorator in its file, because its class statement needs torch and validating a suite
# (`fedbench plan`) must not import torch.
register_model("logistic", "benchmark.models.logistic:logistic")
register_model("binary_logistic", "benchmark.models.logistic:binary_logistic")
register_model("femnist_cnn", "benchmark.models.femnist_cnn:femnist_cnn", traits=("features", "stages"))
register_model("celeba_cnn", "benchmark.models.celeba_cnn:celeba_cnn", traits=("features", "stages"))
register_model("resnet18_gn", "benchmark.models.resnet_gn:resnet18_gn", traits=("features", "stages"))
register_model("shakespeare_lstm", "benchmark.models.shakespeare_lstm:shakespeare_lstm", traits=("features", "stages"))


def known_models() -> list[str]:
    load_installed()
    return sorted(MODELS)


def model_traits(name: str) -> frozenset[str]:
    """The traits of model `name` (none for an unknown name: validation reports the name itself)."""
    load_installed()
    return MODELS[name].traits if name in MODELS else frozenset()


def model_factory(name: str):
    load_installed()
    module, function = MODELS[name].factory.split(":")
    return getattr(importlib.import_module(module), function)


def build_model(
    name: str, input_shape: tuple[int, ...], num_classes: int, params: dict, init: str, seed: int
) -> nn.Module:
    """Build model `name`; weights come from a generator seeded by `seed` (identical for every method)."""
    factory = model_factory(name)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = factory(input_shape=input_shape, num_classes=num_classes, **params)
    with torch.no_grad():
        INITS.get(init).apply(model, seed)
    return model
