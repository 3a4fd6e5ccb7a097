"""benchmark/torch_streams.py draws what torch's CPU generator draws, bit for bit: the FedAc protocol's
samples and w₀ come from it without torch, and its recorded numbers must not move."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from benchmark.torch_streams import TorchGenerator

SEEDS = [0, 1, 2, 7, 123, 2**31 - 1, 2**32 - 1, 2**32 + 5, 2**40 + 3, 2**63 - 1, *range(1000, 1040)]


def seeded(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(seed)
    return g


@pytest.mark.parametrize("n", [1, 2, 7, 123, 32_561, 2**28 - 1, 2**28, 2**31 - 1, 2**32 - 1, 2**32 + 9, 2**62 + 1])
@pytest.mark.parametrize("shape", [(1,), (4, 3, 2), (64, 16, 1), (3, 700)])
def test_randint_is_torchs(n, shape):
    for seed in SEEDS:
        ours = TorchGenerator(seed).randint(n, shape)
        assert ours.dtype == np.int64
        assert np.array_equal(ours, torch.randint(n, shape, generator=seeded(seed)).numpy()), (seed, n, shape)


def test_consecutive_draws_continue_one_stream_as_torchs():
    for seed in SEEDS[:10]:
        g, ours = seeded(seed), TorchGenerator(seed)
        for n, shape in (
            (10, (5,)),
            (32_561, (3, 4)),
            (2**32 - 1, (700,)),
            (9, (1,)),
            (2**28 + 3, (5,)),
        ):  # 624-word refills too
            assert np.array_equal(ours.randint(n, shape), torch.randint(n, shape, generator=g).numpy())


@pytest.mark.parametrize("bounds", [(0.0, 1.0), (-1.0, 1.0), (-1 / math.sqrt(123), 1 / math.sqrt(123)), (-3.3, 1e-3)])
@pytest.mark.parametrize("shape", [(1,), (1, 123), (17, 5), (2000,)])
def test_float32_uniform_is_torchs(bounds, shape):
    for seed in SEEDS:
        ours = TorchGenerator(seed).uniform(shape, *bounds)
        theirs = torch.empty(shape).uniform_(*bounds, generator=seeded(seed)).numpy()
        assert ours.dtype == np.float32 and ours.view(np.uint32).tolist() == theirs.view(np.uint32).tolist()


@pytest.mark.parametrize("shape", [(16,), (1, 123), (40,), (32,), (1000,), (7, 33), (4096,)])
def test_float32_randn_is_torchs(shape):
    for seed in [*SEEDS, *range(200)]:
        ours = TorchGenerator(seed).randn(shape)
        theirs = torch.randn(shape, generator=seeded(seed)).numpy()
        assert ours.dtype == np.float32 and ours.shape == theirs.shape
        assert np.array_equal(ours.view(np.uint32), theirs.view(np.uint32)), seed


def test_what_is_not_reproduced_is_refused():
    with pytest.raises(ValueError, match="fewer than 16"):
        TorchGenerator(0).randn((15,))
    with pytest.raises(ValueError, match="outside"):
        TorchGenerator(0).randint(2**63, (3,))


def test_nn_linear_init_from_manual_seed_is_torchs():
    """binary_logistic's default init: kaiming_uniform_ (bound 1/√fan_in) from torch.manual_seed(seed)."""
    for seed in SEEDS[:12]:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            weight = torch.nn.Linear(123, 1, bias=False).weight.detach().numpy()
        ours = TorchGenerator(seed).uniform((1, 123), -1 / math.sqrt(123), 1 / math.sqrt(123))
        assert np.array_equal(ours.view(np.uint32), weight.view(np.uint32)), seed
