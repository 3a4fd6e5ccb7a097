"""select: {on: validation}: floor(h·n) examples held out of each client, by the split seed's stream."""

from __future__ import annotations

import pytest
import torch
from fedtest import tiny_source

from benchmark.engine.fed_data import FederatedData, as_is
from benchmark.engine.holdout import hold_out
from benchmark.errors import UserError


def federation(sizes: list[int]) -> FederatedData:
    n = sum(sizes)
    src = tiny_source(torch.randn(n, 2), torch.arange(n) % 2, 2)
    clients = list(torch.split(torch.arange(n), sizes))
    return FederatedData(src, clients, as_is)


def test_each_client_holds_out_floor_h_n_and_too_small_ones_hold_out_none():
    data = federation([20, 5, 9, 4])
    held = hold_out(data, 0.2, seed=0)
    assert [len(c) for c in held.clients] == [16, 4, 8, 4]  # floor(0.2·n) = 4, 1, 1, 0
    assert held.too_small == (3,) and len(held.validation) == 6
    for before, after in zip(data.clients, held.clients):  # the rest keeps its order
        assert torch.equal(after, after.sort().values) and set(after.tolist()) <= set(before.tolist())
    everything = torch.cat([*held.clients, held.validation]).sort().values
    assert torch.equal(everything, torch.arange(38))  # disjoint, nothing lost
    assert torch.equal(hold_out(data, 0.2, seed=0).validation, held.validation)  # seeded
    assert not torch.equal(hold_out(data, 0.2, seed=1).validation, held.validation)


def test_a_holdout_that_holds_out_nothing_is_an_error():
    with pytest.raises(UserError, match="every client has fewer than 10 examples"):
        hold_out(federation([5, 9]), 0.1, seed=0)
