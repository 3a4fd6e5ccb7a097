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
    # the walk was seen (a run's calls, from the command line to the summary) and goes one way: no file
    # re-entered, no climb; registry reads (a protocol's batch_key) are the plugin inversion, counted apart
    walk = out.split("\nwalk: ")[1].split("\n")[0]
    assert int(walk.split(" calls")[0]) > 100, out
    assert " 0 re-entries into a file still on the stack, 0 climbs; besides: " in walk, out
    assert (
        "registry read: benchmark/run/protocols.py:claiming -> benchmark/protocols/fedac/__init__.py:batch_key" in out
    )
    # the results folder was followed from the command to the job's folder, and never climbs either
    results = out.split("\nresults walk: ")[1].split("\n")[0]
    assert results.endswith("; 0 climbs") and "JobDir" in results, out
    assert "handed on in 0 calls" not in results, out
    # as a raw path the root goes only to the command, which builds the Store once and hands that down
    assert "the raw root in 1 (named results_dir)" in results, out
    assert "handed: benchmark/cli.py:run -> benchmark/commands/run.py:run_suite (results_dir: root)" in out
