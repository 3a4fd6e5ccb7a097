"""A `run` whose jobs are all done reuses them in one pass that only reads (run/triage.py): no data
loaded, no torch imported, no lock taken; the data's fingerprint comes from the memo that the last load
wrote (run/data_memo.py), and a memo that is missing, corrupt or wrong costs a load, never a verdict."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fedtest import REPO
from report.test_budget import FEDAC_SUITE

from benchmark.cli import main
from benchmark.run.data_memo import DataMemo
from benchmark.store.job_dir import JobDir
from benchmark.store.job_store import job_lock
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

SUITE = """\
name: noop
defaults:
  rounds: 3
  num_clients: 4
  local: {epochs: 1, batch_size: 8, lr: 0.05}
  model: {name: logistic}
  seeds: [0, 1]
datasets:
  - name: synthetic
    params: {num_users: 4, dim: 10, num_classes: 3, max_samples: 40}
    split: {kind: natural}
methods: [fedavg, fedprox]
"""
# a fresh interpreter: which heavy modules a command imported, and its exit code
IMPORTS = """
import json, sys
from benchmark.cli import main
code = main(sys.argv[1:])
print(json.dumps([code, [m for m in ("torch", "benchmark.engine.setup", "benchmark.cli_data") if m in sys.modules]]))
"""


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """A cache (and so a memo) of this test's own, which the fresh interpreters inherit."""
    monkeypatch.setenv("FEDBENCH_CACHE", str(tmp_path / "cache"))


def fresh(args: list[str]) -> tuple[int, list[str], str]:
    done = subprocess.run([sys.executable, "-c", IMPORTS, *args], cwd=REPO, capture_output=True, text=True)
    code, imported = json.loads(done.stdout.strip().splitlines()[-1])
    return code, imported, done.stderr


def finished(tmp_path: Path) -> tuple[list[str], list[JobDir]]:
    suite = tmp_path / "noop.yaml"
    suite.write_text(SUITE)
    args = ["run", str(suite), "--no-tracking", "-q", "--results-dir", str(tmp_path / "r")]
    assert main(args) == 0
    return args, [JobDir(Store(tmp_path / "r"), job.id) for job in load_jobs(suite)[1]]


def memo_files() -> list[Path]:
    return sorted((Path(os.environ["FEDBENCH_CACHE"]) / "data_fingerprints").glob("*.json"))


def test_a_run_with_every_job_done_loads_no_data_and_imports_no_torch(tmp_path):
    args, jobdirs = finished(tmp_path)
    before = [d.summary.read_bytes() for d in jobdirs]
    code, imported, err = fresh(args)
    assert code == 0 and imported == [], err
    assert [d.summary.read_bytes() for d in jobdirs] == before  # reused as they were


def test_a_missing_or_corrupt_memo_costs_a_load_and_is_written_again(tmp_path):
    args, jobdirs = finished(tmp_path)
    for memo in memo_files():
        memo.unlink()
    code, imported, err = fresh(args)
    assert code == 0 and "benchmark.engine.setup" in imported, err  # the data were loaded to know
    assert memo_files() and fresh(args)[1] == []  # and remembered
    for memo in memo_files():
        memo.write_text('{"fingerprint": ')  # cut short
    code, imported, err = fresh(args)
    assert code == 0 and "benchmark.engine.setup" in imported and "Traceback" not in err, err
    assert all(json.loads(m.read_text())["fingerprint"] for m in memo_files())


def test_a_wrong_memo_never_sets_a_job_aside(tmp_path):
    """A memo that disagrees with the job's recorded fingerprint sends the job to the executor, which loads
    the data, finds them equal and reuses the job (and puts the memo right)."""
    args, jobdirs = finished(tmp_path)
    recorded = jobdirs[0].read_summary().data_fingerprint
    for memo in memo_files():
        memo.write_text(json.dumps({"dataset": "synthetic", "fingerprint": "0" * 16}))
    code, imported, err = fresh(args)
    assert code == 0 and "benchmark.engine.setup" in imported, err
    assert all(d.read_summary().status == "finished" for d in jobdirs)
    assert not any(p.name.startswith(f"{jobdirs[0].path.name}.") for p in jobdirs[0].path.parent.iterdir())
    assert [json.loads(m.read_text())["fingerprint"] for m in memo_files()] == [recorded]


def test_a_done_job_is_reused_while_another_process_holds_its_lock(tmp_path):
    """No lock is taken for a job the pass finds done (flock conflicts between two descriptors even
    within one process, so holding it here stands for another process)."""
    args, jobdirs = finished(tmp_path)
    held = job_lock(Store(tmp_path / "r"), jobdirs[0].path.name)
    assert held.acquire(blocking=False)
    try:
        code, imported, err = fresh(args)
    finally:
        held.release()
    assert code == 0 and imported == [] and "waiting" not in err, err


def test_the_memo_stamp_follows_the_dataset_params(tmp_path):
    """Generated data: the params (and the loader's code) make the stamp. (Files' names, sizes and mtimes
    count too: tests/data/test_bad_data.py changes a LEAF shard in place and the job trains again.)"""
    suite = tmp_path / "noop.yaml"
    suite.write_text(SUITE)
    (job,) = load_jobs(suite)[1][:1]
    other = tmp_path / "other.yaml"
    other.write_text(SUITE.replace("max_samples: 40", "max_samples: 50"))
    (moved,) = load_jobs(other)[1][:1]
    assert DataMemo().stamp(job.config) != DataMemo().stamp(moved.config)
    assert DataMemo().stamp(job.config) == DataMemo().stamp(job.config)


def test_over_the_listing_limit_run_counts_the_statuses_and_names_the_report(tmp_path, monkeypatch, capsys):
    """Past LISTED_UP_TO jobs (200) `run` prints a row per dataset and method instead of the result tables,
    whose pandas work grows with the grid (minutes at 10^4 jobs); the limit is lowered here to 3 of 4 jobs."""
    args, _ = finished(tmp_path)
    capsys.readouterr()
    monkeypatch.setattr("benchmark.report.status.LISTED_UP_TO", 3)
    assert main(args) == 0
    shown = capsys.readouterr().out
    assert "noop: 4 jobs, a row per dataset and method" in " ".join(shown.split()) and "acc@" not in shown
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in shown.splitlines() if "Fed" in line]
    assert rows == [["synthetic", "FedAvg", "2", "2"], ["synthetic", "FedProx", "2", "2"]]  # jobs, finished
    assert "the result tables: fedbench report SUITE_FILE" in " ".join(shown.split())


def test_over_the_listing_limit_a_protocols_section_shows_the_reused_jobs_numbers(tmp_path, monkeypatch, capsys):
    """A run keeps only the outcome of a reused job over LISTED_UP_TO jobs; the FedAc section it prints reads
    the numbers of its jobs whole, so a run with nothing to do prints the table the run that trained them did
    (it printed every reused job as diverged)."""
    monkeypatch.setattr("benchmark.report.status.LISTED_UP_TO", 0)
    suite = tmp_path / "fedac.yaml"
    suite.write_text(FEDAC_SUITE)
    args = ["run", str(suite), "--no-tracking", "-q", "--results-dir", str(tmp_path / "r")]
    tables = []
    for _ in range(2):  # trains its 6 jobs, then reuses them
        capsys.readouterr()
        assert main(args) == 0
        shown = capsys.readouterr().out
        tables.append([line for line in shown.splitlines() if line.startswith("│")])  # the table's rows
    assert tables[0] and tables[1] == tables[0] and "all lost" not in " ".join(tables[1])
    assert all(re.search(r"\de-\d\d \(", row) for row in tables[1])  # F − F* (its η) in each method's row
