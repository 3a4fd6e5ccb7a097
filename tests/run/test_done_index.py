"""The index of done jobs (store/done_index.py): a run over LISTED_UP_TO jobs reuses a job the index knows
without reading its summary while its folder, summary.json and metrics.jsonl are as the index last saw
them; any change (an edit in place, a file cut, code changed) sends it back to the full check, and a cut,
garbled or foreign index costs full checks, never a verdict. The limits are lowered here: LISTED_UP_TO to
0 (every run keeps only the outcome) and RACY_NS to 0 (jobs just trained are indexed at once)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fedtest import REPO
from test_noop_run import SUITE  # four tiny finished jobs

from benchmark import racy
from benchmark.cli import main
from benchmark.store import done_index
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

# a fresh interpreter with the limits lowered, as the tests' own process has them
RUN = """
import sys
from benchmark import racy
from benchmark.report import status
racy.RACY_NS, status.LISTED_UP_TO = 0, 0
from benchmark.cli import main
sys.exit(main(sys.argv[1:]))
"""

# Both processes import first, then start together: on a loaded machine one could otherwise finish before the other
# begins, and find the index already made.
GATED = (
    """
import os, sys, time
from benchmark.cli import main
gate = sys.argv.pop(1)
open(gate + "." + str(os.getpid()), "w").close()
while not os.path.exists(gate):
    time.sleep(0.005)
"""
    + RUN
)


@pytest.fixture(autouse=True)
def lowered(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("benchmark.report.status.LISTED_UP_TO", 0)
    monkeypatch.setattr(racy, "RACY_NS", 0)


def finished(tmp_path: Path) -> tuple[list[str], list[JobDir]]:
    """Four finished jobs, and the index the next run makes of them."""
    suite = tmp_path / "noop.yaml"
    suite.write_text(SUITE)
    args = ["run", str(suite), "--no-tracking", "-q", "--results-dir", str(tmp_path / "r")]
    assert main(args) == 0  # trains them
    assert main(args) == 0  # finds them done: indexes them
    return args, [JobDir(Store(tmp_path / "r"), job.id) for job in load_jobs(suite)[1]]


def indexed(tmp_path: Path) -> dict:
    return done_index.DoneIndex(Store(tmp_path / "r")).entries


def read_in_full(monkeypatch) -> list[str]:
    """The jobs whose summary the next run reads (the full check), in order."""
    read: list[str] = []
    full = JobDir.done_summary

    def counted(self):
        read.append(self.path.name)
        return full(self)

    monkeypatch.setattr(JobDir, "done_summary", counted)
    return read


def test_an_unchanged_job_is_reused_from_the_index_without_reading_it(tmp_path, monkeypatch):
    args, jobdirs = finished(tmp_path)
    assert sorted(indexed(tmp_path)) == sorted(d.path.name for d in jobdirs)
    assert {e.status for e in indexed(tmp_path).values()} == {"finished"}
    read = read_in_full(monkeypatch)
    assert main(args) == 0
    assert read == []


def test_a_metrics_file_cut_in_place_is_checked_in_full_and_trained_again(tmp_path, monkeypatch):
    args, jobdirs = finished(tmp_path)
    cut = jobdirs[0]
    with open(cut.metrics, "r+b") as f:  # in place: the folder's signature stays, the file's changes
        f.truncate(cut.metrics.stat().st_size // 2)
    read = read_in_full(monkeypatch)
    assert main(args) == 0
    assert read[0] == cut.path.name and set(read) == {cut.path.name}  # only it, then by the executor again
    assert cut.is_done() and (cut.path.parent / f"{cut.path.name}.damaged").is_dir()  # healed, the cut one kept


def test_a_summary_edited_to_other_code_is_stale_whatever_the_index_says(tmp_path, monkeypatch):
    args, jobdirs = finished(tmp_path)
    edited = jobdirs[1]
    summary = json.loads(edited.summary.read_text())
    summary["code_parts"]["engine"] = "0" * 12
    edited.summary.write_text(json.dumps(summary))  # in place, as an editor might
    assert main(args) == 0
    aside = [p.name for p in edited.path.parent.iterdir() if p.name.startswith(f"{edited.path.name}.code-")]
    assert len(aside) == 1 and edited.read_summary().code_parts["engine"] != "0" * 12  # trained again


def test_a_deleted_model_sends_the_job_to_the_executor(tmp_path, monkeypatch):
    args, jobdirs = finished(tmp_path)
    jobdirs[2].model.unlink()  # the folder's mtime moves: its entry no longer holds
    read = read_in_full(monkeypatch)
    assert main(args) == 0
    assert jobdirs[2].path.name in read and jobdirs[2].model.exists()


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # cut by a full disk
        lambda text: text.replace(" finished ", " finishee ", 1),  # a byte changed: its checksum fails
        lambda text: "not an index\n\0\0\0" + text,
        lambda text: "\n".join(line.replace("v1 ", "v9 ") for line in text.split("\n")),  # a later fedbench's
    ],
    ids=["cut", "garbled", "foreign lines", "other version"],
)
def test_a_damaged_index_costs_full_checks_never_a_verdict(tmp_path, monkeypatch, damage):
    args, jobdirs = finished(tmp_path)
    path = Path(done_index.DoneIndex(Store(tmp_path / "r")).path)
    path.write_bytes(damage(path.read_text()).encode())
    kept = set(indexed(tmp_path))
    read = read_in_full(monkeypatch)
    assert main(args) == 0
    assert set(read) == {d.path.name for d in jobdirs} - kept  # the entries it lost were checked in full
    assert sorted(indexed(tmp_path)) == sorted(d.path.name for d in jobdirs)  # and indexed again


def test_an_entry_for_other_files_is_not_trusted(tmp_path, monkeypatch):
    """A job's folder replaced by a copy (times kept, as `cp -p` or rsync keeps them) has other inodes."""
    args, jobdirs = finished(tmp_path)
    replaced = jobdirs[3].path
    shutil.copytree(replaced, replaced.with_name("copy"))  # copy2: the files' mtimes kept
    shutil.rmtree(replaced)
    replaced.with_name("copy").rename(replaced)
    read = read_in_full(monkeypatch)
    assert main(args) == 0
    assert read == [replaced.name]  # checked in full (and found done: reused)
    assert replaced.name in indexed(tmp_path)


def test_two_processes_append_to_one_index(tmp_path):
    args, jobdirs = finished(tmp_path)
    path = Path(done_index.DoneIndex(Store(tmp_path / "r")).path)
    path.unlink()  # both rebuild it at once
    gate = tmp_path / "go"
    procs = [
        subprocess.Popen([sys.executable, "-c", GATED, str(gate), *args], cwd=REPO, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    while len(list(tmp_path.glob("go.*"))) < 2 and all(p.poll() is None for p in procs):
        time.sleep(0.01)
    gate.touch()
    assert [p.wait() for p in procs] == [0, 0], [p.stderr.read() for p in procs]
    lines = path.read_text().splitlines()
    # each wrote its 4 whole lines, or (the other's index already complete when it looked) none
    assert len(lines) in (4, 8) and all(done_index._parsed(line) for line in lines)
    assert sorted(indexed(tmp_path)) == sorted(d.path.name for d in jobdirs)


def test_status_and_report_never_make_the_index(tmp_path):
    suite = tmp_path / "noop.yaml"
    suite.write_text(SUITE)
    assert main(["run", str(suite), "--no-tracking", "-q", "--results-dir", str(tmp_path / "r")]) == 0
    path = Path(done_index.DoneIndex(Store(tmp_path / "r")).path)
    assert not path.exists()  # a run that trained its jobs has verified none yet
    assert main(["status", str(suite), "--results-dir", str(tmp_path / "r")]) == 0
    assert main(["report", str(suite), "--no-tracking", "--results-dir", str(tmp_path / "r")]) == 0
    assert not path.exists()
