"""Behaviour pinned before the engine is reshaped: the job ids of every shipped suite, and a
results folder (with an MLflow store) written by the fedbench of that time.

Both are committed under tests/fixtures/ and read by tests/test_pinned.py. Regenerate them only on
purpose, for a change that is meant to alter job ids or results, and say so in its commit:

    python tests/pinned.py job-ids          # tests/fixtures/job_ids.json
    python tests/pinned.py frozen-results   # tests/fixtures/frozen_results/
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
JOB_IDS = FIXTURES / "job_ids.json"
FROZEN = FIXTURES / "frozen_results"
FROZEN_SUITE = FROZEN / "suite.yaml"
# where the MLflow store of the frozen folder was made; a copy rewrites it to its own place
MADE_AT = "/frozen-results-made-here"


def shipped_suites() -> list[Path]:
    return sorted(REPO.glob("suites/*.yaml")) + sorted(REPO.glob("suites/papers/*.yaml"))


def shipped_job_ids() -> dict[str, list[str]]:
    """Suite file (relative to the repo) -> the ids its expansion yields, sorted."""
    from benchmark.suite.expand import load_jobs

    return {str(path.relative_to(REPO)): sorted(job.id for job in load_jobs(path)[1]) for path in shipped_suites()}


def write_job_ids() -> None:
    JOB_IDS.write_text(json.dumps(shipped_job_ids(), indent=1) + "\n")


def _relocate_store(db: Path, old: str, new: str) -> None:
    """MLflow keeps absolute artifact paths in its store: point them from `old` to `new`."""
    with sqlite3.connect(db) as con:
        con.execute("UPDATE experiments SET artifact_location = replace(artifact_location, ?, ?)", (old, new))
        con.execute("UPDATE runs SET artifact_uri = replace(artifact_uri, ?, ?)", (old, new))
    con.close()


def frozen_copy(dest: Path) -> Path:
    """A writable copy of the frozen folder at `dest` (suite.yaml, results/, mlflow.db, mlartifacts/)."""
    shutil.copytree(FROZEN, dest)
    _relocate_store(dest / "mlflow.db", MADE_AT, str(dest))
    return dest


def _ctrl_c_in_round(at: int):
    """Simulation.run_round, patched to be interrupted (as by a second Ctrl-C) when round `at` starts."""
    from benchmark.engine.simulation import Simulation

    run_round = Simulation.run_round

    def interrupted(self, t, *listener):
        if t + 1 == at:
            raise KeyboardInterrupt
        return run_round(self, t, *listener)

    Simulation.run_round = interrupted
    return lambda: setattr(Simulation, "run_round", run_round)


def make_frozen_results(folder: Path = FROZEN) -> None:
    """Run the frozen suite, tracked in one MLflow store beside the results: FedAvg to the end;
    FedACG stopped by --stop-after 2 (status `stopped`, checkpoint kept); FedProx interrupted in
    round 4 (no summary, checkpoint at round 3, its MLflow run KILLED)."""
    from benchmark.cli import main

    suite = FROZEN_SUITE.read_text()
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "suite.yaml").write_text(suite)
    store = f"sqlite:///{folder / 'mlflow.db'}"
    common = [
        "run",
        str(folder / "suite.yaml"),
        "--results-dir",
        str(folder / "results"),
        "--tracking-uri",
        store,
        "-q",
    ]
    cwd = os.getcwd()
    os.chdir(folder)  # MLflow puts the artifacts of a new SQLite store under the working folder
    try:
        for extra in (["--only", "FedAvg"], ["--only", "FedACG", "--stop-after", "2"]):
            if main([*common, *extra]) != 0:
                raise SystemExit(f"fedbench {' '.join(common + extra)} failed")
        undo = _ctrl_c_in_round(4)
        try:
            if main([*common, "--only", "FedProx"]) != 130:
                raise SystemExit("the interrupted FedProx run did not stop with exit code 130")
        finally:
            undo()
    finally:
        os.chdir(cwd)
    for lock in folder.rglob("*.lock"):
        lock.unlink()
    _relocate_store(folder / "mlflow.db", str(folder), MADE_AT)
    with sqlite3.connect(folder / "mlflow.db") as con:  # 1 KiB pages: a third of the default store's size
        con.execute("PRAGMA page_size = 1024")
        con.execute("VACUUM")
    con.close()


if __name__ == "__main__":
    what = sys.argv[1:] and sys.argv[1]
    if what == "job-ids":
        write_job_ids()
    elif what == "frozen-results":
        make_frozen_results()
    else:
        raise SystemExit("usage: python tests/pinned.py job-ids | frozen-results")
