"""A FedAc-protocol `run` pays no fixed cost it does not need: no figure (matplotlib) or frames (pandas) until `report`,
numba only where local steps are taken in a cell large enough to repay its start-up, a9a parsed once per machine (tests/data/test_a9a.py tests the
cache itself)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from fedtest import REPO

SUITE = """\
name: fedac-tiny
defaults:
  seeds: [0]
  rounds: 4
  eval_every: 2
  participation: {mode: fixed, rate: 1.0}
  model: {name: binary_logistic, init: normal}
  local: {steps: 3, batch_size: 1, weight_decay: 0.001, clip_norm: null}
  suboptimality: true
datasets:
  - name: a9a
    root: {root}
    split: {kind: shared}
methods: {methods}
grid:
  num_clients: [4]
  local.lr: [0.01, 0.1]
"""

# runs the CLI in this interpreter, then prints which heavy modules the command imported
PROBE = """\
import json, sys
from benchmark.cli import main
code = main(sys.argv[1:])
print("MODULES " + json.dumps(sorted(m for m in ("torch", "matplotlib", "scipy", "numba", "pandas") if m in sys.modules)))
sys.exit(code)
"""


def write_a9a(root: Path, rows: int, seed: int) -> None:
    """LIBSVM text as a9a's: ±1 labels, a few binary features of 123 per row."""
    rng = random.Random(seed)
    root.mkdir()
    for name, n in (("a9a", rows), ("a9a.t", rows // 2)):
        lines = []
        for _ in range(n):
            cols = sorted(rng.sample(range(1, 124), 5))
            lines.append(f"{rng.choice('+-')}1 " + " ".join(f"{c}:1" for c in cols))
        (root / name).write_text("\n".join(lines) + "\n")


def fedbench(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "FEDBENCH_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("MODULES ")]
    return done, json.loads(line.removeprefix("MODULES "))


def test_run_draws_no_figure_and_report_draws_it(tmp_path):
    write_a9a(tmp_path / "data", rows=60, seed=0)
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.replace("{root}", str(tmp_path / "data")).replace("{methods}", "[fedac1, mbsgd]"))
    results = ["--results-dir", str(tmp_path / "results"), "--no-tracking"]
    ran, modules = fedbench(tmp_path, "run", str(suite), *results, "--threads", "1", "-q")
    assert ran.returncode == 0, ran.stderr
    assert "FedAc-I" in ran.stdout  # the section's table, without its figure, and without pandas: rows of text
    assert "matplotlib" not in modules and "pandas" not in modules
    figure = tmp_path / "results" / "fedac-tiny" / "report" / "figures" / "fedac_figure.png"
    assert not figure.exists()
    reported, modules = fedbench(tmp_path, "report", str(suite), *results, "--json")
    assert reported.returncode == 0, reported.stderr
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "matplotlib" in modules and "pandas" in modules
    assert "fedac_figure.pdf" in (tmp_path / "results" / "fedac-tiny" / "report" / "report.html").read_text()


def test_one_step_methods_run_without_numba(tmp_path):
    """MB-SGD and MB-AC-SGD take one step a round (a matrix product): numba's start-up is the kernel's alone."""
    write_a9a(tmp_path / "data", rows=60, seed=1)
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.replace("{root}", str(tmp_path / "data")).replace("{methods}", "[mbsgd, mbacsgd]"))
    ran, modules = fedbench(tmp_path, "run", str(suite), "--results-dir", str(tmp_path / "results"), "--no-tracking")
    assert ran.returncode == 0, ran.stderr
    assert "numba" not in modules and "MB-AC-SGD" in ran.stdout
    summaries = list((tmp_path / "results" / "jobs").glob("*/summary.json"))
    assert len(summaries) == 4 and all(json.loads(p.read_text())["final_subopt"] > 0 for p in summaries)


def test_small_local_step_cells_run_without_numba(tmp_path):
    """FedAc and FedAvg take K local steps; a cell this small costs less in numpy than numba's start-up
    (numpy_round.py's cost model), so numba is never imported."""
    write_a9a(tmp_path / "data", rows=60, seed=3)
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.replace("{root}", str(tmp_path / "data")).replace("{methods}", "[fedac1, fedac2, fedavg]"))
    ran, modules = fedbench(tmp_path, "run", str(suite), "--results-dir", str(tmp_path / "results"), "--no-tracking")
    assert ran.returncode == 0, ran.stderr
    assert "numba" not in modules and "scipy" not in modules and "FedAc-II" in ran.stdout
    summaries = [json.loads(p.read_text()) for p in (tmp_path / "results" / "jobs").glob("*/summary.json")]
    assert len(summaries) == 6 and all(s["status"] == "finished" and s["final_subopt"] > 0 for s in summaries)


@pytest.mark.parametrize("mode", ["default", "authors_numpy"])
def test_a_fedac_run_imports_no_torch(tmp_path, mode):
    """The batched engine, its data, objective, model file and records: torch is never imported, in the
    default stream (torch's draws, reproduced) and in the authors' numpy stream, once the machine has F*
    (solved with torch by its first run on the data and λ, then read from the cache, as the decoded a9a is);
    torch reads the model files."""
    write_a9a(tmp_path / "data", rows=60, seed=2)
    text = SUITE.replace("{root}", str(tmp_path / "data")).replace("{methods}", "[fedac1, fedac2, fedavg, mbsgd]")
    if mode == "authors_numpy":
        text = text.replace("init: normal}", "init: normal_numpy}").replace(
            "split: {kind: shared}", "split: {kind: shared, samples: authors_numpy}"
        )
    suite = tmp_path / "suite.yaml"
    suite.write_text(text)
    first, modules = fedbench(tmp_path, "run", str(suite), "--results-dir", str(tmp_path / "first"), "--no-tracking")
    assert first.returncode == 0 and "torch" in modules, first.stderr  # F*'s Newton solve, once per machine
    ran, modules = fedbench(tmp_path, "run", str(suite), "--results-dir", str(tmp_path / "results"), "--no-tracking")
    assert ran.returncode == 0, ran.stderr
    assert "torch" not in modules and "FedAc-II" in ran.stdout
    jobs = [p.parent for p in (tmp_path / "results" / "jobs").glob("*/summary.json")]
    assert len(jobs) == 8
    dtype = torch.float64 if mode == "authors_numpy" else torch.float32
    for job in jobs:
        summary = json.loads((job / "summary.json").read_text())
        assert summary["status"] == "finished" and summary["environment"]["threads"] is None
        weight = torch.load(job / "final_model.pt", weights_only=True)["fc.weight"]
        assert weight.dtype == dtype and weight.shape == (1, 123) and bool(torch.isfinite(weight).all())
