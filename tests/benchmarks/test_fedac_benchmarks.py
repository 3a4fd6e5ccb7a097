"""benchmarks/fedac_vs_authors.py asks fedbench for the authors' cell, and benchmarks/startup_phases.py
splits a real run into phases."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark.protocols.fedac.jobs import batch_key
from benchmark.suite.expand import load_jobs

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import fedac_vs_authors  # noqa: E402


@pytest.mark.parametrize("method", list(fedac_vs_authors.ALG))
def test_the_cell_suite_is_the_authors_cell_as_one_batch(tmp_path, method):
    suite = tmp_path / "suite.yaml"
    suite.write_text(fedac_vs_authors.suite_yaml(method, 64, 64, tmp_path))
    _, jobs = load_jobs(suite)
    assert sorted(j.config.local.lr_schedule.round_lr(0) for j in jobs) == fedac_vs_authors.LRS
    c = jobs[0].config
    assert (c.num_clients, c.local.steps, c.rounds * c.local.steps, c.local.batch_size) == (64, 64, 4096, 1)
    assert (c.local.weight_decay, c.seed, c.eval_every * c.local.steps) == (1e-3, 1, 512)
    assert len({batch_key(j.config) for j in jobs}) == 1 and batch_key(c) is not None  # one batched computation
    term = c.method.term("fedac")
    if method == "fedac2":  # the authors' code's β, not the paper's
        assert term.params.beta_rule == "authors_code"
    # the same alg code in the authors' training lines as in their a9a_1e-03.py
    script = fedac_vs_authors.authors_script(Path("/x"), method, 64, 64)
    assert f"model.train({fedac_vs_authors.ALG[method]}, 0.001, 64, 64, 4096, 1, 1, 512)" in script


@pytest.mark.slow
def test_startup_phases_splits_a_fedac_run(tmp_path):
    from engine.test_fedac_fixed_costs import SUITE, write_a9a

    write_a9a(tmp_path / "data", rows=60, seed=2)
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.replace("{root}", str(tmp_path / "data")).replace("{methods}", "[fedac1]"))
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "startup_phases.py"), str(suite), "--repeats", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "FEDBENCH_CACHE": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stderr
    for phase in ("FedAc batch: computation", "FedAc local steps in numpy", "result tables", "final models written"):
        assert phase in done.stdout, phase
    assert "import numba" not in done.stdout  # a cell this small takes its local steps in numpy
    assert "import torch" not in done.stdout  # a FedAc run imports no torch (its warm-up run solved F*)
    rest = [ln for ln in done.stdout.splitlines() if "outside those phases" in ln]
    assert len(rest) == 1 and float(rest[0].split()[-1]) > 0  # the interpreter and the imports, at least
    assert "CPU s (medians of 1)" in done.stdout.splitlines()[0]  # the whole process's CPU, the measurement under load


@pytest.mark.slow
def test_the_floor_arm_times_numpy_and_the_engine_on_the_cell(tmp_path, monkeypatch):
    from engine.test_fedac_fixed_costs import write_a9a

    write_a9a(tmp_path / "data", rows=60, seed=2)
    monkeypatch.setenv("FEDBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("FEDBENCH_CACHE", str(tmp_path / "cache"))
    cpu = fedac_vs_authors.run_floor(tmp_path, "mbsgd", 4)
    # an interpreter importing numpy alone costs tens of CPU-ms: the engine's seconds come on top of it
    assert 0.01 < cpu < 60
