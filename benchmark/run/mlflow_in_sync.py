"""Whether a `run` with nothing to train may leave MLflow alone: `results/<suite>/.mlflow-mirrored`.

Importing MLflow and asking the store whether every selected job's run is complete costs a no-op `run`
most of its time (1.5-2.5 s of 3.4 s on the quickstart). So a tracked process that ended with the store
mirroring its suite completely (every job's run written, the suite's run and headline runs summarised,
no tracking call failed, no other process running the suite) records what it left: the store file's
identity (device, inode, size, mtimes of the SQLite file and of its journal files), the selected jobs
with the identity of each summary.json, the suite file's bytes and the process's provenance tags. A later
`run` that finds every selected job done and all of these unchanged makes no MLflow call at all: healing
would find nothing to do, and the suite's runs already hold what summarising would write again.

Anything else falls back to opening the store as always: a store that is not a local SQLite file (a
server's content cannot be seen without asking it), any write to the store since (another suite's runs
too, a run deleted in the UI, a process killed mid-run: each changes the file), any job's summary
rewritten, retrained, damaged or set aside, another selection, an edited suite file, another commit or
version. The mark is a cache, never a source of truth: a missing, damaged or foreign one only costs the
full check.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from benchmark.run.mlflow_new_store import sqlite_file
from benchmark.store.job_dir import JobDir, atomic_write_json
from benchmark.store.layout import Store

VERSION = 1


def mark_path(results: Store, suite: str) -> Path:
    return results.suite(suite).mlflow_mark


def identity(path: Path) -> list[int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def state(uri: str, results: Store, job_ids, suite_file: Path | None, provenance: dict) -> dict | None:
    """What the mark records, as things are now; None where no mark can vouch for the store."""
    database = sqlite_file(uri)
    if database is None or (store := identity(database)) is None:
        return None
    journals = [identity(Path(f"{database}{suffix}")) for suffix in ("-wal", "-journal")]
    jobs = hashlib.sha256()
    for job_id in sorted(job_ids):
        if (summary := identity(JobDir(results, job_id).summary)) is None:
            return None
        jobs.update(f"{job_id} {summary}\n".encode())
    suite_bytes = Path(suite_file).read_bytes() if suite_file else b""
    return {
        "version": VERSION,
        "store": str(database),
        "store_files": [store, *journals],
        "jobs": jobs.hexdigest(),
        "suite_file": hashlib.sha256(suite_bytes).hexdigest(),
        "provenance": provenance,
    }


def write_mark(path: Path, now: dict | None, experiment_id: str) -> None:
    """Record `now` (state()) as fully mirrored into the experiment; a state that cannot be vouched for
    removes an earlier mark instead."""
    if now is None:
        path.unlink(missing_ok=True)
        return
    atomic_write_json(path, {**now, "experiment_id": experiment_id}, durable=False)


def mirrored_experiment(path: Path, now: dict | None) -> str | None:
    """The experiment's id when the mark at `path` vouches for `now` (state()), else None."""
    if now is None:
        return None
    try:
        mark = json.loads(path.read_bytes())
        experiment_id = mark.pop("experiment_id")
    except (OSError, ValueError, KeyError, AttributeError, TypeError):
        return None
    return str(experiment_id) if mark == now else None
