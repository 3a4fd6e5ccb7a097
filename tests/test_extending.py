"""docs/extending.md runs as written: its example files are written where their names say, beside
a table of data, and its commands run them as if they were part of fedbench."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import numpy as np
import pandas as pd
from fedtest import EXTENDING, REPO, extending_examples

COMMANDS = re.compile(r"```bash run\n(.*?)```", flags=re.S)
# Runs a command of the doc with the example files as if they were in the package: their folders
# join the packages' search paths, so only the registries' discovery can find them.
DRIVER = """
import runpy, sys
from pathlib import Path
import benchmark.data, benchmark.fl, benchmark.report.outputs, benchmark.run
for package in (benchmark.data, benchmark.fl, benchmark.report.outputs, benchmark.run):
    package.__path__.append(str(Path(*package.__name__.split(".")).resolve()))
if sys.argv[1] == "fedbench":
    from benchmark.cli import main
    sys.exit(main(sys.argv[2:]))
runpy.run_path(sys.argv[2], run_name="__main__")
"""


def write_table(path, n: int = 120) -> None:
    """Three separable classes in two feature columns, as the doc's csv_table example reads."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, n)
    x = rng.normal(0, 1, (n, 2)) + np.array([[0, 0], [3, 0], [0, 3]])[y]
    path.write_text("x1,x2,label\n" + "".join(f"{a:.4f},{b:.4f},{c}\n" for (a, b), c in zip(x, y)))


def test_the_extending_examples_run_as_new_files(tmp_path):
    doc = EXTENDING.read_text()
    examples = extending_examples()
    assert {
        "benchmark/fl/fedmedian.py",
        "benchmark/data/csv_table.py",
        "benchmark/run/shortest_first.py",
        "benchmark/report/outputs/leaderboard.py",
        "param_norm.py",
    } <= set(examples)
    for name, text in examples.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    write_table(tmp_path / "table.csv")
    (tmp_path / "driver.py").write_text(DRIVER)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    for line in "".join(COMMANDS.findall(doc)).splitlines():
        program, *args = shlex.split(line)
        command = [sys.executable, "driver.py", "fedbench" if program == "fedbench" else "script", *args]
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
    table = pd.read_csv(tmp_path / "results" / "extending" / "final_accuracy.csv")
    assert list(table["method"]) == ["FedAvg", "FedMedian"] and list(table["count"]) == [2, 2]
    assert (table["mean"] > 0.5).all()  # three separable blobs: both methods learn them
    # the output: a file of the report; the per-round value: a column of its table, the max over rounds
    report = tmp_path / "results" / "extending" / "report"
    board = pd.read_csv(report / "leaderboard.csv")
    assert sorted(board["method"]) == ["FedAvg", "FedMedian"] and board["final_ema_acc"].is_monotonic_decreasing
    tidy = pd.read_csv(report / "tables" / "csv_table.csv")
    assert (tidy["param_norm.mean"] > 0).all() and list(tidy["param_norm.n"]) == [2, 2]
    assert "max ‖θ‖" in (report / "report.md").read_text()
