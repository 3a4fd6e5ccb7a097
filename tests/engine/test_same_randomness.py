"""Every method sees the same clients, batches and augmented images (streams keyed by seed,
round and client), so differences between methods come from the methods alone."""

from __future__ import annotations

import torch
from fedtest import job_config

from benchmark.data.source import SourceData
from benchmark.engine.fed_data import FederatedData
from benchmark.engine.setup import PREPROCESSORS
from benchmark.engine.simulation import Simulation
from benchmark.job.settings import AugmentConfig
from benchmark.models.registry import build_model


def image_source() -> SourceData:
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (40, 3, 8, 8), generator=g, dtype=torch.uint8)
    y = torch.randint(0, 4, (40,), generator=g)
    return SourceData(x, y, x[:8], y[:8], 4, "image", mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))


def batches_seen(method: str) -> list[tuple[int, int, torch.Tensor, torch.Tensor]]:
    job = job_config(
        method, rounds=2, num_clients=4, participation={"rate": 0.5}, local={"epochs": 1, "batch_size": 4, "lr": 0.05}
    )
    job.dataset.augment = AugmentConfig(crop_padding=2, flip=True, rotate_degrees=10)
    src = image_source()
    data = FederatedData(src, [torch.arange(i * 10, (i + 1) * 10) for i in range(4)], PREPROCESSORS["image"](src, job))
    sim = Simulation(job, data, build_model("logistic", src.input_shape, 4, {}, "default", 0))
    seen = []
    original = sim.setup.data.client_batches

    def record(seed, rnd, client, local):
        out = original(seed, rnd, client, local)
        seen.extend((rnd, client, b.x, b.y) for b in out)
        return out

    sim.setup.data.client_batches = record
    sim.run()
    return seen


def test_methods_see_identical_clients_batches_and_augmentations():
    reference = batches_seen("fedavg")
    assert len(reference) == 2 * 2 * 3  # rounds x clients x ceil(10 / 4) steps
    assert not torch.equal(reference[0][2], reference[3][2])  # batches differ from step to step
    for method in ("fedacg", "scaffold", "feddyn"):
        other = batches_seen(method)
        assert [(r, c) for r, c, _, _ in other] == [(r, c) for r, c, _, _ in reference]
        assert all(torch.equal(a[2], b[2]) and torch.equal(a[3], b[3]) for a, b in zip(reference, other)), method
