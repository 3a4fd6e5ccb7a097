"""A job's client split, built by data/partition.py and cached on disk by engine/setup.py: the same
indices from the cache as built, and a split the data cannot give stops the run with its reason."""

from __future__ import annotations

import torch

from benchmark.cli import main
from benchmark.data.cache import cache_dir
from benchmark.engine.setup import federated_data, forget_loaded_data
from benchmark.suite.expand import load_jobs

SUITE = """\
name: split
defaults:
  rounds: 1
  num_clients: 8
  model: {{name: logistic}}
datasets:
  - name: synthetic
    params: {{num_users: 4, dim: 5, num_classes: 3, max_samples: 40}}
    split: {{kind: dirichlet_unbalanced, alpha: 0.5, min_size: {min_size}}}
methods: [fedavg]
"""


def test_the_cached_split_is_the_built_one(tmp_path):
    path = tmp_path / "split.yaml"
    path.write_text(SUITE.format(min_size=10))
    job = load_jobs(path)[1][0].config
    forget_loaded_data()
    before = set((cache_dir() / "tensors").glob("split-*.pt"))
    built = federated_data(job).clients
    (written,) = set((cache_dir() / "tensors").glob("split-*.pt")) - before
    forget_loaded_data()  # the next read comes from the file the first one wrote
    mtime = written.stat().st_mtime_ns
    cached = federated_data(job).clients
    assert written.stat().st_mtime_ns == mtime and len(built) == 8
    assert all(torch.equal(a, b) for a, b in zip(built, cached, strict=True))


def test_a_split_the_data_cannot_give_stops_the_run(tmp_path, capsys):
    path = tmp_path / "split.yaml"
    path.write_text(SUITE.format(min_size=100))
    assert main(["run", str(path), "--results-dir", str(tmp_path / "results"), "--no-tracking"]) == 2
    err = capsys.readouterr().err
    assert "dataset 'synthetic': cannot split: 8 clients x min_size 100 > 128 training examples" in err, err
    assert "Traceback" not in err
