"""Client-state backends: the memory-mapped store behaves like the in-memory one."""

from __future__ import annotations

import torch
from methods_support import CLASSES, DIM, make_sim, random_init

from benchmark.fl.state import ClientStateStore, MemmapClientStateStore, make_client_store


def test_memmap_store_roundtrip_and_empty_state(tmp_path):
    store = MemmapClientStateStore(5, tmp_path)
    assert store.get(3, "cpu") == {} and 3 not in store and len(store) == 0
    a, b = torch.randn(7), torch.randn(2, 3)
    store.put(3, {"x": a, "y": b})
    store.put(1, {"x": a * 2})
    got = store.get(3, "cpu")
    assert torch.equal(got["x"], a) and torch.equal(got["y"], b)
    assert set(store.get(1, "cpu")) == {"x"} and len(store) == 2 and store.get(0, "cpu") == {}
    checkpoint = store.state_dict()
    store.put(3, {"x": a * 3, "y": b * 3})  # training goes on after the checkpoint...
    reopened = MemmapClientStateStore(5, tmp_path)  # ...then a resume reopens the job's folder
    reopened.load_state_dict(checkpoint)
    assert torch.equal(reopened.get(3, "cpu")["y"], b) and torch.equal(reopened.get(1, "cpu")["x"], a * 2)


def test_scaffold_gives_the_same_numbers_with_either_store(tmp_path):
    runs = []
    for store in (ClientStateStore(), make_client_store("memmap", 4, tmp_path)):
        sim = make_sim("scaffold", sizes=(3, 4, 5, 3), rate=0.5, init=random_init(DIM * CLASSES + CLASSES))
        sim.setup.clients = store
        for t in range(3):
            sim.run_round(t)
        runs.append(sim.progress.theta)
    assert torch.equal(runs[0], runs[1])
