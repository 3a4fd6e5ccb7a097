"""`fedbench plan --splits` reports each split; splits are cached and identical when reloaded."""

from __future__ import annotations

import re

import torch
from fedtest import tiny_suite, write_suite

from benchmark.cli import main
from benchmark.data.cache import cache_dir
from benchmark.engine import setup
from benchmark.suite.expand import expand
from benchmark.suite.schema import Suite


def skew_suite() -> dict:
    suite = tiny_suite(methods=["fedavg"])
    base = {
        "name": "synthetic",
        "params": {"iid": True, "num_users": 4, "dim": 5, "num_classes": 4, "max_samples": 400},
    }
    suite["datasets"] = [{**base, "split": {"kind": "dirichlet", "alpha": a}} for a in (0.05, 100.0)]
    return suite


def test_plan_splits_prints_sizes_histograms_and_skew(tmp_path, capsys):
    assert main(["plan", str(write_suite(tmp_path, skew_suite())), "--splits", "--max-clients", "2"]) == 0
    out = capsys.readouterr().out
    skews = [float(x) for x in re.findall(r"label skew \(mean TV\) ([0-9.]+)", out)]
    assert len(skews) == 2 and skews[0] > skews[1]  # α = 0.05 is more skewed than α = 100
    assert "4 more" in out and "sizes min" in out


def test_split_is_cached_on_disk_and_reloads_identically():
    job = expand(Suite(**skew_suite()))[0].config
    first = setup.federated_data(job).clients
    assert list((cache_dir() / "tensors").glob("split-*.pt"))
    setup._clients.cache_clear()  # drop the in-process cache: the next load comes from disk
    again = setup.federated_data(job).clients
    assert all(torch.equal(a, b) for a, b in zip(first, again))
