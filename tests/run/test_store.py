"""The results store addressed by job id (store/job_store.py): the frozen fixture's folders (the layout before
the store) move into it whole, a kill at any rename leaves every job readable and a rerun ends the move,
and a suite that `extends:` another reuses the parent's finished jobs instead of training them again."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from fedtest import tiny_suite, write_suite
from pinned import FROZEN, frozen_copy

from benchmark.cli import main
from benchmark.store import job_store as store
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

FROZEN_IDS = sorted(p.name for p in (FROZEN / "results" / "frozen").iterdir() if not p.name.startswith("."))


def tree(root: Path) -> dict[str, str]:
    """Every file (its bytes' length and first bytes) and link (its target) under `root`, but lock files."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = f"-> {os.readlink(p)}"
        elif p.is_file() and ".locks" not in p.parts:
            out[rel] = p.read_bytes().hex()[:64] + str(p.stat().st_size)
    return out


def test_the_frozen_jobs_move_into_the_store_once_and_their_suite_links_to_them(tmp_path, caplog):
    results = frozen_copy(tmp_path / "f") / "results"
    before = {i: tree(results / "frozen" / i) for i in FROZEN_IDS}
    with caplog.at_level(logging.INFO, logger="benchmark.store.job_store"):
        assert store.migrate_to_job_store(Store(results)) == 3
    assert "moved 3 job folder(s) into the job store" in caplog.text
    for job_id in FROZEN_IDS:
        assert tree(results / "jobs" / job_id) == before[job_id]  # every file, unchanged
        assert os.readlink(results / "frozen" / job_id) == f"../jobs/{job_id}"
    after = tree(results)
    assert store.migrate_to_job_store(Store(results)) == 0 and tree(results) == after  # idempotent


class Killed(BaseException):
    """What a SIGKILL at that instant leaves behind: nothing after it runs (no except, no finally cleanup)."""


@pytest.mark.parametrize("killed_at", range(6))  # 3 jobs x 2 renames (the folder, then its link)
def test_a_migration_killed_at_any_rename_leaves_every_job_readable_and_a_rerun_ends_it(
    tmp_path, monkeypatch, killed_at
):
    straight = frozen_copy(tmp_path / "straight") / "results"
    store.migrate_to_job_store(Store(straight))
    results = frozen_copy(tmp_path / "killed") / "results"
    calls, real_replace = [], os.replace

    def replace_until_killed(src, dst):
        if len(calls) == killed_at:
            raise Killed
        calls.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(store.os, "replace", replace_until_killed)
    with pytest.raises(Killed):
        store.migrate_to_job_store(Store(results))
    monkeypatch.setattr(store.os, "replace", real_replace)
    for job_id in FROZEN_IDS:  # in its old place or in the store, whole
        old, new = results / "frozen" / job_id, results / "jobs" / job_id
        where = old if old.is_dir() and not old.is_symlink() else new
        assert tree(where) == tree(straight / "jobs" / job_id), job_id
    store.migrate_to_job_store(Store(results))
    assert tree(results) == tree(straight)


def test_two_suites_that_each_ran_a_job_keep_the_finished_copy_and_the_other_aside(tmp_path):
    results = frozen_copy(tmp_path / "f") / "results"
    finished = next(i for i in FROZEN_IDS if (results / "frozen" / i / "final_model.pt").exists())
    (results / "other").mkdir()
    os.replace(results / "frozen" / finished, results / "other" / finished)  # "other" has the finished copy
    config = json.loads((results / "other" / finished / "config.json").read_text())
    (results / "other" / finished / "config.json").write_text(json.dumps({**config, "suite": "other"}))
    (results / "frozen" / finished).mkdir()  # "frozen" an unfinished one: its config only
    (results / "frozen" / finished / "config.json").write_text(json.dumps(config))
    store.migrate_to_job_store(Store(results))
    assert JobDir(Store(results), finished).is_done()
    kept = [p.name for p in (results / "jobs").iterdir() if p.name.startswith(f"{finished}.")]
    assert len(kept) == 1 and [p.name for p in (results / "jobs" / kept[0]).iterdir()] == ["config.json"]
    assert all((results / suite / finished).is_symlink() for suite in ("frozen", "other"))


def test_a_suite_named_like_the_store_is_refused(tmp_path):
    path = write_suite(tmp_path, tiny_suite(name="jobs", methods=["fedavg"]))
    assert main(["run", str(path), "--results-dir", str(tmp_path / "r"), "--no-tracking", "-q"]) == 2


def test_a_suite_extending_another_reuses_its_finished_job_without_training_it(tmp_path, capsys):
    parent = write_suite(tmp_path, tiny_suite(name="paper", methods=["fedavg"]), "paper.yaml")
    child = write_suite(tmp_path, {"name": "mine", "extends": "paper.yaml", "methods": ["fedprox"]}, "mine.yaml")
    results = tmp_path / "results"
    assert main(["run", str(parent), "--results-dir", str(results), "--no-tracking", "-q"]) == 0
    (baseline,) = load_jobs(parent)[1]
    summary = JobDir(Store(results), baseline.id).summary
    written, stamp = summary.read_bytes(), summary.stat().st_mtime_ns
    assert json.loads(written)["schema"] == 2

    from benchmark.run.executor import run_jobs

    suite, jobs = load_jobs(child)
    assert baseline.id in {j.id for j in jobs} and len(jobs) == 2  # the parent's job, plus FedProx
    summaries = run_jobs(jobs, suite.name, Store(results))
    assert summaries[baseline.id].skipped is True  # reused, not rerun
    assert not summaries[next(j.id for j in jobs if j.id != baseline.id)].skipped
    assert summary.read_bytes() == written and summary.stat().st_mtime_ns == stamp  # untouched
    assert (results / "mine" / baseline.id).is_symlink() and (results / "paper" / baseline.id).is_symlink()
    capsys.readouterr()
    assert main(["status", str(child), "--results-dir", str(results)]) == 0
    assert "2 done" in capsys.readouterr().out


def test_two_suites_running_at_once_never_train_their_shared_job_twice(tmp_path, monkeypatch):
    """The paper suite's process holds the shared job (one lock per job id, whatever the suite) and
    finishes it while the extending suite trains its own job: the extending suite waits, then skips it."""
    import threading

    import benchmark.run.executor as executor
    from benchmark.run.executor import run_jobs

    parent = write_suite(tmp_path, tiny_suite(name="paper", methods=["fedavg"]), "paper.yaml")
    child = write_suite(tmp_path, {"name": "mine", "extends": "paper.yaml", "methods": ["fedprox"]}, "mine.yaml")
    (shared,) = load_jobs(parent)[1]
    suite, jobs = load_jobs(child)
    results, train, trained = tmp_path / "results", executor.run_job, []
    paper_process = store.job_lock(Store(results), shared.id)
    assert paper_process.acquire()

    def recording(job, suite_name, jobdir, *args, **kwargs):
        trained.append((suite_name, job.id))
        if job.id != shared.id:  # meanwhile the paper suite's process trains the shared job, then lets go
            train(shared, "paper", JobDir(Store(results), shared.id))
            threading.Timer(0.2, paper_process.release).start()
        return train(job, suite_name, jobdir, *args, **kwargs)

    monkeypatch.setattr(executor, "run_job", recording)
    summaries = run_jobs(jobs, suite.name, Store(results))
    assert [job_id for _, job_id in trained] == [j.id for j in jobs if j.id != shared.id]  # never the shared one
    assert summaries[shared.id].skipped and summaries[shared.id].suite == "paper"
