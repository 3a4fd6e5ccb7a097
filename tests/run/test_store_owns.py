"""The store touches only what provably is its own (issue 34 point 1): a results folder holding, beside
fedbench's jobs of both layouts, folders of the user's with a `config.json` or `summary.json`, a
look-alike whose config parses as a job but is not the hash of its name, and a FIFO named config.json.
Every command runs over it; nothing foreign moves or changes, read-only commands write nothing at all,
and the real old-layout jobs still move into the store."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from fedtest import tiny_suite, write_suite
from pinned import FROZEN, frozen_copy

from benchmark.cli import main
from benchmark.suite.expand import load_jobs

FROZEN_IDS = sorted(p.name for p in (FROZEN / "results" / "frozen").iterdir() if not p.name.startswith("."))
LOOK_ALIKE = "0123456789ab"  # a job id's shape, and a job's config.json, of another job
FIFO_JOB = "abcdefabcdef"
FOREIGN = ["webapp", "photos", f"frozen/{LOOK_ALIKE}", f"frozen/{FIFO_JOB}"]


def listing(root: Path, leave_out: str | None = None) -> dict[str, str]:
    """Every entry under `root`: a file's sha256, a link's target, a folder, a FIFO (never opened)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if leave_out and (rel == leave_out or rel.startswith(leave_out + "/")):
            continue
        mode = p.lstat().st_mode
        out[rel] = (
            f"-> {os.readlink(p)}"
            if stat.S_ISLNK(mode)
            else "dir"
            if stat.S_ISDIR(mode)
            else hashlib.sha256(p.read_bytes()).hexdigest()
            if stat.S_ISREG(mode)
            else "special"
        )
    return out


def foreign_listing(results: Path) -> dict[str, dict[str, str]]:
    return {name: listing(results / name) for name in FOREIGN}


@pytest.fixture
def crowded(tmp_path) -> tuple[Path, Path, Path]:
    """(frozen suite file, tiny suite file, results folder): the frozen jobs in the layout before the
    store, the tiny suite's in the store, and the user's own folders among them."""
    frozen = frozen_copy(tmp_path / "frozen")
    results = frozen / "results"
    tiny = write_suite(tmp_path, tiny_suite(methods=["fedavg"]))
    elsewhere = tmp_path / "elsewhere"
    assert main(["run", str(tiny), "--results-dir", str(elsewhere), "--no-tracking", "-q"]) == 0
    for name in ("jobs", "tiny"):  # its links are relative (../jobs/<id>): they hold wherever the pair goes
        shutil.move(elsewhere / name, results / name)
    (results / "webapp" / "settings").mkdir(parents=True)
    (results / "webapp" / "settings" / "config.json").write_text('{"theme": "dark"}\n')
    (results / "photos" / "2024").mkdir(parents=True)
    (results / "photos" / "2024" / "summary.json").write_text('{"photos": 12}\n')
    (results / "photos" / "2024" / "beach.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    real = json.loads((results / "frozen" / FROZEN_IDS[0] / "config.json").read_text())
    (results / "frozen" / LOOK_ALIKE).mkdir()
    look_alike = {**real, "job_id": LOOK_ALIKE, "local": {**real["local"], "lr": 0.5}}
    (results / "frozen" / LOOK_ALIKE / "config.json").write_text(json.dumps(look_alike))
    (results / "frozen" / LOOK_ALIKE / "summary.json").write_text('{"status": "finished"}')
    (results / "frozen" / FIFO_JOB).mkdir()
    os.mkfifo(results / "frozen" / FIFO_JOB / "config.json")  # reading it would block for ever
    return frozen / "suite.yaml", tiny, results


def named_once(caplog, results: Path) -> bool:
    looks = ("webapp/settings", "photos/2024", f"frozen/{LOOK_ALIKE}", f"frozen/{FIFO_JOB}")
    return all(caplog.text.count(f"{results / name} is not a fedbench job folder") == 1 for name in looks)


def test_status_report_and_plan_change_nothing_and_name_each_look_alike_once(crowded, capsys, caplog):
    frozen, tiny, results = crowded
    before = listing(results)
    for command in (
        ["status", str(frozen), "--results-dir", str(results)],
        ["status", str(tiny), "--results-dir", str(results)],
        ["report", str(tiny), "--results-dir", str(results), "--no-tracking"],
        ["plan", str(frozen)],
    ):
        caplog.clear()
        assert main(command) == 0, command
        assert listing(results, leave_out="tiny/report") == before, command  # report/: what report writes
        if command[0] == "plan":  # plan does not look at results
            continue
        assert named_once(caplog, results), command
        assert f"{LOOK_ALIKE} is not a fedbench job folder (its name is not the hash of its config.json)" in caplog.text
        assert f"{FIFO_JOB} is not a fedbench job folder (its config.json is no job's file)" in caplog.text
        # a store is there already: the old-layout jobs wait for a command that writes, and are said to
        assert "3 job folder(s) of the layout before the job store" in caplog.text


def test_a_results_folder_without_a_store_is_read_in_place_by_status_and_report(tmp_path, capsys):
    frozen = frozen_copy(tmp_path / "frozen")
    results = frozen / "results"
    before = listing(results)
    assert main(["status", str(frozen / "suite.yaml"), "--results-dir", str(results)]) == 0
    assert "1 done" in capsys.readouterr().out
    assert main(["report", str(frozen / "suite.yaml"), "--results-dir", str(results), "--no-tracking"]) == 0
    assert listing(results, leave_out="frozen/report") == before  # no jobs/, no .locks/, nothing moved


def test_run_and_sync_move_the_old_layout_jobs_and_nothing_else(crowded, caplog):
    frozen, tiny, results = crowded
    foreign, tiny_jobs = foreign_listing(results), listing(results / "tiny")
    store_before = listing(results / "jobs")
    uri = f"sqlite:///{results.parent / 'mlflow.db'}"
    assert main(["run", str(frozen), "--results-dir", str(results), "--no-tracking", "-q"]) == 0
    assert foreign_listing(results) == foreign and named_once(caplog, results)
    for job_id in FROZEN_IDS:  # the real old-layout jobs moved, and their suite links to them
        assert os.readlink(results / "frozen" / job_id) == f"../jobs/{job_id}"
        assert (results / "jobs" / job_id / "summary.json").exists()
    _, tiny_expanded = load_jobs(tiny)
    new_in_store = set(os.listdir(results / "jobs")) - {p.split("/")[0] for p in store_before}
    assert new_in_store == set(FROZEN_IDS)  # no look-alike among them
    caplog.clear()
    assert main(["sync", str(frozen), "--results-dir", str(results), "--tracking-uri", uri]) == 0
    assert named_once(caplog, results)
    assert main(["run", str(tiny), "--results-dir", str(results), "--no-tracking", "-q"]) == 0  # all skipped
    assert foreign_listing(results) == foreign
    assert listing(results / "tiny") == tiny_jobs and all((results / "tiny" / j.id).is_symlink() for j in tiny_expanded)


def test_proc_as_results_folder_is_a_clear_error_for_run_and_read_for_status(tmp_path, capsys):
    suite = write_suite(tmp_path, tiny_suite(methods=["fedavg"]))
    assert main(["run", str(suite), "--results-dir", "/proc", "--no-tracking", "-q"]) == 2
    assert "cannot write results" in capsys.readouterr().err
    assert main(["status", str(suite), "--results-dir", "/proc"]) == 0
    assert "0 done" in capsys.readouterr().out
