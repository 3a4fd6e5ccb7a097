"""benchmarks/job_walk.py traces one job's walk for real and counts what issue 32 points 3 and 4 name."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_walk_is_traced_and_counted(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "FEDBENCH_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "job_walk.py"), "--edges"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "engine files importing benchmark.suite.schema: 0 []" in out
    nulls = out.split("null in every job of every shipped suite: ")[1].split("\n")[0]
    assert set(ast.literal_eval(nulls.split(" ", 1)[1])) <= {"root", "uri"}, (
        out
    )  # where the data lives: set where it is elsewhere
    # the walk was seen (a run's calls, from the command line to the summary), and the rounds are handed out:
    # neither the runner nor the executor is re-entered, and the engine calls nothing above it
    calls = int(out.split("walk: ")[1].split(" calls")[0])
    assert calls > 100, out
    reentered = [line.split(": ", 1)[1] for line in out.splitlines() if line.strip().startswith("re-entered")]
    assert not [f for f in reentered if f.startswith(("benchmark/engine/", "benchmark/data/", "benchmark/run/"))], out
    climbs = [line.split(": ", 1)[1] for line in out.splitlines() if line.strip().startswith("climb:")]
    assert not [c for c in climbs if c.startswith(("benchmark/engine/", "benchmark/data/"))], out
