"""select: {on: validation}: a grid selected on examples held out of the clients' training data can
pick another setting than the test set would. Constructed case: the test labels are the training
labels flipped. A model trained well (lr 0.5) is right on the held-out training examples and wrong on
the test set; one that barely moves from zero weights (lr 1e-4) predicts class 0 everywhere, about
half right on both. Validation picks lr 0.5, the test set lr 1e-4."""

from __future__ import annotations

import json

from fedtest import write_suite

from benchmark.cli import main
from benchmark.report.entry_tables import best_settings
from benchmark.report.frames import jobs_frame
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

PLUGIN = """
import torch
from benchmark.api import DatasetSpec, SourceData, register_dataset


def load(params, root):
    gen = torch.Generator().manual_seed(0)
    x, x_test = torch.randn(400, 2, generator=gen), torch.randn(200, 2, generator=gen)
    return SourceData(x, (x[:, 0] > 0).long(), x_test, (x_test[:, 0] <= 0).long(), 2, "vector")


register_dataset(DatasetSpec("flipped_test_labels", load))
"""


def suite(select: dict | None) -> dict:
    defaults = {
        "rounds": 5,
        "num_clients": 4,
        "participation": {"rate": 1.0},
        "local": {"epochs": 2, "batch_size": 10},
        "model": {"name": "logistic", "init": "zeros"},
        **({"select": select} if select else {}),
    }
    return {
        "name": "flipped",
        "plugins": ["flipped_plugin"],
        "defaults": defaults,
        "datasets": [{"name": "flipped_test_labels", "split": {"kind": "iid"}}],
        "methods": ["fedavg"],
        "grid": {"local.lr": [0.0001, 0.5]},
    }


def test_validation_selects_another_setting_than_the_test_set(tmp_path, monkeypatch):
    (tmp_path / "flipped_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = write_suite(tmp_path, suite({"on": "validation", "holdout": 0.2}))
    results = tmp_path / "results"
    assert main(["run", str(path), "--no-tracking", "--results-dir", str(results), "-q"]) == 0
    _, jobs = load_jobs(path)
    frame = jobs_frame(jobs, Store(results))
    assert best_settings(frame, False, "validation") == {"FedAvg": "FedAvg local.lr=0.5"}
    assert best_settings(frame, False, "test") == {"FedAvg": "FedAvg local.lr=0.0001"}
    trained = frame[frame.setting == "FedAvg local.lr=0.5"].iloc[0]
    assert trained.final_val_ema_acc > 80 and trained.final_ema_acc < 20  # flipped labels: right on one, wrong on other
    summary = json.loads((results / "flipped" / jobs[0].id / "summary.json").read_text())
    assert summary["validation"] == {"holdout": 0.2, "held_out": 80, "too_small": []}  # 4 clients x floor(0.2·100)
    assert main(["report", str(path), "--no-tracking", "--results-dir", str(results)]) == 0
    report = (results / "flipped" / "report" / "report.md").read_text()
    assert "selected on: validation" in report and "lr=0.5" in report
    # the selection metric shown beside the test numbers, and plotted against the grid
    assert "| selected on: val acc (EMA, %, round 5) |" in report
    assert "final validation accuracy (EMA, %), the metric the grid was selected on, against each" in report
    # the same suite selected on the test set: other job ids, and the report marks the protocol
    _, test_jobs = load_jobs(write_suite(tmp_path, suite(None), "test.yaml"))
    assert not {j.id for j in test_jobs} & {j.id for j in jobs}
