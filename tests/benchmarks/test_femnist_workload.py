"""benchmarks/femnist_workload.py: its fedbench arm asks for the plain loop's work, and its quick mode runs."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark.suite.expand import load_jobs

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import femnist_workload  # noqa: E402


def test_the_generated_suite_is_one_fedavg_job_of_the_configured_work(tmp_path):
    args = argparse.Namespace(rounds=3, clients=4, steps=5, batch=7, lr=0.02)
    cfg = femnist_workload.settings(args)
    suite = tmp_path / "suite.yaml"
    suite.write_text(femnist_workload.suite_yaml(cfg))
    _, jobs = load_jobs(suite)
    (job,) = jobs
    c = job.config
    assert (c.method.label, c.dataset.name, c.dataset.split.kind, c.model.name) == (
        "FedAvg",
        "femnist",
        "natural",
        "femnist_cnn",
    )
    assert (c.rounds, c.num_clients, c.participation.rate) == (3, 4, 1.0)  # every client, every round
    assert (c.local.steps, c.local.batch_size, c.local.lr) == (5, 7, 0.02)
    assert (c.local.weight_decay, c.local.clip_norm, c.local.lr_decay) == (cfg["weight_decay"], cfg["clip"], 1.0)


def test_bad_settings_exit_2():
    with pytest.raises(SystemExit) as stop:
        femnist_workload.main(["--clients", "0"])
    assert stop.value.code == 2


@pytest.mark.slow
def test_quick_mode_runs_every_available_arm_with_the_same_steps(data_root):
    cmd = [sys.executable, str(REPO / "benchmarks" / "femnist_workload.py"), "--quick", "--root", str(data_root)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    table = [line.split() for line in done.stdout.splitlines()]
    rows = {row[0]: row for row in table if len(row) == 9 and row[0] in femnist_workload.ARMS}
    expected = {"fedbench", "plain"} | ({"flower"} if importlib.util.find_spec("flwr") else set())
    assert set(rows) == expected, done.stdout
    assert {row[-1] for row in rows.values()} == {str(2 * 3 * 2)}  # rounds x clients x steps, each arm
    assert rows["plain"][3] == "1.00x"
    if "flower" not in rows:
        assert "flower arm skipped" in done.stdout
