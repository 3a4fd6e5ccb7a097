"""benchmarks/tracking_cost.py runs its three arms on a suite written as a person writes one, and prints
the tracked arms' ratios and cost per job over the jobs each arm ran."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SUITE = """\
name: tiny
defaults:
  rounds: 2
  num_clients: 4
  local: {epochs: 1, batch_size: 8, lr: 0.05}
  model: {name: logistic}
datasets:
  - name: synthetic
    params: {num_users: 4, dim: 10, num_classes: 3, max_samples: 40}
    split: {kind: natural}
methods: [fedavg, fedacg]
"""


@pytest.mark.slow
def test_it_times_untracked_and_both_stores_and_prints_ratios_per_job(tmp_path):
    suite = tmp_path / "tiny.yaml"
    suite.write_text(SUITE)
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "tracking_cost.py"), "--suite", str(suite), "--repeats", "1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "existing store: 2 runs of seed 1" in out
    for arm in ("untracked", "new store", "existing store"):
        assert re.search(rf"repeat 0 +{arm}: +[\d.]+ s wall, +[\d.]+ s CPU, 2 jobs", out), out
    for arm in ("new store", "existing store"):  # the summary: ratios to the untracked arm and ms a job
        assert re.search(rf"{arm}: .*; x[\d.]+ wall, x[\d.]+ CPU; -?[\d.]+ ms wall, -?[\d.]+ ms CPU a job", out), out
    assert not list(tmp_path.glob("mlruns")) and not (tmp_path / "mlflow.db").exists()  # all in its temp folder
