"""Every preset (and the composed +ACG variants) trains a few rounds on the FEMNIST LEAF sample
without NaN and beats chance (1/62). A small MLP with the stage protocol serves every method,
FedMLB included, and keeps the test CPU-friendly."""

from __future__ import annotations

import math
import os
import tarfile
from pathlib import Path

import pytest
import torch
from fedtest import StageMLP

from benchmark.engine.setup import federated_data
from benchmark.engine.simulation import Simulation
from benchmark.fl.method import resolve_method
from benchmark.fl.presets import preset_names
from benchmark.job.config import JobConfig, JobData
from benchmark.job.settings import LocalTraining, ModelConfig, Participation

pytestmark = [pytest.mark.realdata, pytest.mark.slow]

ARCHIVE = "femnist-leaf-sample.tar.gz"
COMPOSED = ["fedmlb+acg", "fedlc+acg", "feddecorr+acg", "fedntd+acg", "fedpaq+acg"]


@pytest.fixture(scope="module")
def femnist_root(tmp_path_factory) -> Path:
    data = os.environ.get("FEDBENCH_DATA")
    if not data:
        pytest.skip("FEDBENCH_DATA is unset: no local datasets")
    archive = Path(data) / ARCHIVE
    if not archive.is_file():
        pytest.skip(f"{archive} not found")
    root = tmp_path_factory.mktemp("femnist")
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    return root


@pytest.mark.parametrize("name", preset_names() + COMPOSED)
def test_preset_trains_on_femnist(name, femnist_root):
    job = JobConfig(
        dataset=JobData(name="femnist", root=str(femnist_root), split={"kind": "natural"}),
        method=resolve_method(name, "methods[0]"),
        seed=0,
        rounds=4,
        eval_every=4,
        num_clients=10,
        participation=Participation(rate=0.5),
        local=LocalTraining(steps=10, batch_size=20),
        model=ModelConfig(),
        metrics=[],
        precision="fp32",
        checkpoint_every=0,
    )
    torch.manual_seed(0)
    sim = Simulation(job, federated_data(job), StageMLP())
    records = sim.run()
    assert all(math.isfinite(r["train_loss"]) and math.isfinite(r["test_loss"]) for r in records)
    assert torch.isfinite(sim.progress.theta).all()
    assert records[-1]["test_acc"] > 100 / 62
