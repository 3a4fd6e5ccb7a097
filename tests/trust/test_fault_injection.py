"""A run killed at each of its write points, or stopped by a full disk, resumes to exactly the
results of a run never interrupted, and removes the temp files the kill left."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from fedtest import measured, tiny_suite, write_suite

import benchmark.store.job_dir as results
from benchmark.cli import main
from benchmark.store.job_dir import TEMP_NAME, JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

KILL = Path(__file__).with_name("kill_at_write.py")


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """The suite (one 6-round job, checkpoint every 2 rounds) and its uninterrupted results."""
    tmp = tmp_path_factory.mktemp("straight")
    raw = tiny_suite(methods=["fedacg"])
    raw["defaults"].update(rounds=6, checkpoint_every=2, checkpoint_minutes=0)
    suite = write_suite(tmp, raw)
    assert main(["run", str(suite), "--no-tracking", "--results-dir", str(tmp / "r")]) == 0
    (job,) = load_jobs(suite)[1]
    return suite, JobDir(Store(tmp / "r"), job.id)


def temps(jobdir: JobDir) -> list[str]:
    return sorted(p.name for p in jobdir.path.rglob(".*") if TEMP_NAME.match(p.name))


def assert_same_results(jobdir: JobDir, reference: JobDir) -> None:
    assert jobdir.read_summary().status == "finished" and temps(jobdir) == []
    assert measured(jobdir.read_metrics()) == measured(reference.read_metrics())
    mine, theirs = (torch.load(d.model, weights_only=True) for d in (jobdir, reference))
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
    assert not jobdir.checkpoint.exists()


# (file, which of its renames): checkpoints at rounds 2 and 4, metrics flushed with each and at the
# end, then the model and the summary; a subprocess each (~1.5 s on an idle machine)
@pytest.mark.parametrize(
    "name, nth",
    [("checkpoint.pt", 2), ("metrics.jsonl", 1), ("metrics.jsonl", 3), ("final_model.pt", 1), ("summary.json", 1)],
)
def test_a_kill_at_each_write_point_resumes_to_the_straight_results(tmp_path, straight, name, nth):
    suite, reference = straight
    args = ["run", str(suite), "--no-tracking", "--threads", "1", "--results-dir", str(tmp_path / "r")]
    killed = subprocess.run([sys.executable, str(KILL), name, str(nth), *args], capture_output=True, text=True)
    assert killed.returncode == 137, killed.stderr
    jobdir = JobDir(Store(tmp_path / "r"), reference.path.name)
    assert [t.split(".")[1] for t in temps(jobdir)] == [name.split(".")[0]]  # the unfinished write's temp file
    assert jobdir.read_summary() is None  # nothing claims the job is done
    assert main(args) == 0
    assert_same_results(jobdir, reference)


def test_a_full_disk_stops_the_run_with_exit_2_and_a_later_run_resumes(tmp_path, straight, monkeypatch, capsys):
    suite, reference = straight
    args = ["run", str(suite), "--no-tracking", "--threads", "1", "--results-dir", str(tmp_path / "r")]
    rename = os.replace

    def disk_full_at_round_4_checkpoint(src, dst):
        if (
            os.path.basename(dst) == "checkpoint.pt"
            and JobDir(Store(tmp_path / "r"), reference.path.name).checkpoint.exists()
        ):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        rename(src, dst)

    monkeypatch.setattr(results.os, "replace", disk_full_at_round_4_checkpoint)
    assert main(args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "Traceback" not in err and "No space left on device (ENOSPC)" in err and "checkpoint.pt" in err
    assert "Free space, then run the same command again" in err
    jobdir = JobDir(Store(tmp_path / "r"), reference.path.name)
    assert jobdir.read_summary() is None  # not recorded as a failed job
    monkeypatch.undo()
    assert main(args) == 0
    assert_same_results(jobdir, reference)


@pytest.mark.parametrize("make", ["file", "unwritable"])
def test_a_results_dir_that_cannot_be_written_is_exit_2_with_path_and_reason(
    tmp_path, straight, capsys, monkeypatch, make
):
    suite, _ = straight
    target = tmp_path / "results"
    if make == "file":
        target.write_text("not a folder")
        expected = "Not a directory (ENOTDIR)"
    else:  # as root, chmod does not stop writes: refuse them where the probe creates its file

        def denied(*args, **kwargs):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(target / "tiny"))

        monkeypatch.setattr(results.tempfile, "TemporaryFile", denied)
        expected = "Permission denied (EACCES)"
    assert main(["run", str(suite), "--no-tracking", "--results-dir", str(target)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "Traceback" not in err and f"cannot write results: {target / 'tiny'}" in err and expected in err, err


def test_an_environment_error_no_command_handled_is_exit_2_not_a_traceback(tmp_path, straight, monkeypatch, capsys):
    suite, _ = straight

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(tmp_path / "r"))

    monkeypatch.setattr("benchmark.cli.load_selected", read_only)  # as if the first touch of the disk failed
    assert main(["plan", str(suite)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "cannot go on: " + str(tmp_path / "r") in err and "Read-only file system (EROFS)" in err


def test_a_finished_jobs_stale_temp_files_are_removed_by_the_next_run(tmp_path, straight):
    suite, reference = straight
    args = ["run", str(suite), "--no-tracking", "--threads", "1", "--results-dir", str(tmp_path / "r")]
    assert main(args) == 0
    jobdir = JobDir(Store(tmp_path / "r"), reference.path.name)
    (jobdir.path / ".metrics.jsonl.k3j9x2ab").write_text("a write a kill cut short")
    assert temps(jobdir) == [".metrics.jsonl.k3j9x2ab"]
    assert main(args) == 0  # the job is skipped, and tidied
    assert temps(jobdir) == [] and jobdir.read_summary().status == "finished"


def disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as write() and fsync() raise it: no file named


class FullDiskFile:
    """What TemporaryFile gives on a full disk: a file that is created, then refuses its bytes."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    write = staticmethod(disk_full)


@pytest.mark.parametrize("where", ["probe", "first result"])
def test_a_full_disk_before_the_first_write_names_the_path(tmp_path, straight, monkeypatch, capsys, where):
    """A failed write() names no file: the error named none either ("cannot write results: No space left")."""
    suite, reference = straight
    target = tmp_path / "r"
    if where == "probe":  # the results folder's write probe, before any job
        monkeypatch.setattr(results.tempfile, "TemporaryFile", lambda **kwargs: FullDiskFile())
        expected = f"cannot write results: {target / 'tiny'}:"
    else:  # the first file a job writes (its config.json), at its fsync
        monkeypatch.setattr(results.os, "fsync", disk_full)
        expected = f"{target / 'jobs' / reference.path.name / 'config.json'}:"
    assert main(["run", str(suite), "--no-tracking", "--results-dir", str(target)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "Traceback" not in err and f"{expected} No space left on device (ENOSPC)" in err, err
