"""Test helpers: tiny suites written to disk, hand-built simulations on tiny data, a stage-protocol MLP."""

from __future__ import annotations

import re
from pathlib import Path

import torch
import yaml
from torch import nn

from benchmark.data.source import SourceData
from benchmark.engine.fed_data import FederatedData, default_preprocess
from benchmark.engine.simulation import Simulation
from benchmark.models.registry import build_model
from benchmark.suite.expand import expand
from benchmark.suite.schema import Suite

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_FILE = re.compile(r"```\w+ file=(\S+)\n(.*?)```", flags=re.S)


EXTENDING = REPO / "docs" / "extending.md"


def extending_examples() -> dict[str, str]:
    """docs/extending.md's example files (```python file=NAME blocks): name -> text."""
    return dict(EXAMPLE_FILE.findall(EXTENDING.read_text()))


def write_suite(tmp_path: Path, suite: dict, name: str = "suite.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def tiny_suite(**overrides) -> dict:
    """A synthetic suite that runs in well under a second per job."""
    suite = {
        "name": "tiny",
        "defaults": {
            "rounds": 4,
            "num_clients": 6,
            "participation": {"rate": 0.5},
            "local": {"epochs": 1, "batch_size": 8, "lr": 0.05},
            "model": {"name": "logistic"},
            "metrics": ["acc@2", "rounds_to@30"],
        },
        "datasets": [
            {
                "name": "synthetic",
                "params": {"num_users": 6, "dim": 10, "num_classes": 3, "max_samples": 60},
                "split": {"kind": "natural"},
            }
        ],
        "methods": ["fedavg", "fedacg"],
    }
    suite.update(overrides)
    return suite


def measured(records: list) -> list[dict]:
    """Metric records (read back typed, or lines of the file) as in the file without their wall-clock `time` and
    `wall_s` (what two equal runs must agree on)."""
    return [
        {k: v for k, v in (r if isinstance(r, dict) else r.to_json()).items() if k not in ("time", "wall_s")}
        for r in records
    ]


def job_config(method="fedavg", **settings):
    """A resolved JobConfig for `method` with `settings` overriding the tiny defaults."""
    raw = tiny_suite(methods=[method])
    raw["defaults"].update(settings)
    return expand(Suite(**raw))[0].config


def tiny_source(x: torch.Tensor, y: torch.Tensor, num_classes: int) -> SourceData:
    return SourceData(x, y, x.clone(), y.clone(), num_classes, "vector")


def tiny_simulation(job, x: torch.Tensor, y: torch.Tensor, clients: list[list[int]], num_classes: int) -> Simulation:
    """A simulation on hand-given data and client index lists, logistic model at zero."""
    src = tiny_source(x, y, num_classes)
    data = FederatedData(src, [torch.tensor(c) for c in clients], default_preprocess(src))
    model = build_model("logistic", src.input_shape, num_classes, {}, "zeros", 0)
    return Simulation(job, data, model)


class StageMLP(nn.Module):
    """in_dim → hidden → hidden → classes with tanh; stages = the two hidden layers (the stage
    protocol of models/registry.py, so every method runs on it, FedMLB included). Defaults: FEMNIST."""

    num_stages = 2

    def __init__(self, classes: int = 62, hidden: int = 64, in_dim: int = 784):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(in_dim, hidden), nn.Linear(hidden, hidden)])
        self.head = nn.Linear(hidden, classes)

    def forward(self, x, features: bool = False, stages: bool = False, start: int = 0):
        h = x.flatten(1) if start == 0 else x
        outs = []
        for k in range(start, len(self.blocks)):
            h = torch.tanh(self.blocks[k](h))
            outs.append(h)
        logits = self.head(h)
        if stages:
            return logits, outs
        return (logits, h) if features else logits
