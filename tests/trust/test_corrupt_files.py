"""Truncated checkpoints, metrics files cut mid-line and corrupt summaries: named, and the job
continues from the last good point or restarts, saying so; never an endless failure loop."""

from __future__ import annotations

import logging

import torch
from fedtest import measured, tiny_suite, write_suite

from benchmark.run.executor import run_jobs
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs


def interrupted_job(tmp_path, stop_after: int = 5):
    """A 6-round job (checkpoint every 2 rounds) stopped after `stop_after` rounds, its checkpoint there; and the same job run straight."""
    raw = tiny_suite(methods=["fedacg"])
    raw["defaults"].update(rounds=6, checkpoint_every=2)
    suite, jobs = load_jobs(write_suite(tmp_path, raw))
    run_jobs(jobs, suite.name, Store(tmp_path / "straight"))
    run_jobs(jobs, suite.name, Store(tmp_path / "r"), stop_after=stop_after)
    return jobs, JobDir(Store(tmp_path / "r"), jobs[0].id), JobDir(Store(tmp_path / "straight"), jobs[0].id)


def test_truncated_checkpoint_is_named_moved_aside_and_the_job_restarts(tmp_path, caplog):
    jobs, d, straight = interrupted_job(tmp_path)
    d.checkpoint.write_bytes(d.checkpoint.read_bytes()[:100])
    with caplog.at_level(logging.WARNING):
        summary = run_jobs(jobs, "tiny", Store(tmp_path / "r"))[jobs[0].id]
    assert summary.status == "finished"
    assert f"{d.checkpoint} cannot be resumed from: it is unreadable" in caplog.text
    assert "restarts from round 0" in caplog.text
    assert (d.path / "checkpoint.pt.corrupt").exists()
    assert measured(d.read_metrics()) == measured(straight.read_metrics())


def test_a_checkpoint_of_another_model_is_set_aside_and_the_job_restarts(tmp_path, caplog):
    jobs, d, straight = interrupted_job(tmp_path)
    foreign = d.load_checkpoint()
    foreign["simulation"]["theta"] = torch.zeros(5)
    torch.save(foreign, d.checkpoint)
    with caplog.at_level(logging.WARNING):
        assert run_jobs(jobs, "tiny", Store(tmp_path / "r"))[jobs[0].id].status == "finished"
    assert "does not fit this job: its parameters are not a tensor of shape (33,)" in caplog.text
    assert measured(d.read_metrics()) == measured(straight.read_metrics())


def test_metrics_cut_after_the_checkpoint_resume_from_it(tmp_path, caplog):
    jobs, d, straight = interrupted_job(tmp_path)  # checkpoint at round 5 (stopped there)
    text = d.metrics.read_text()
    d.metrics.write_text(text + '{"round": 6, "test_a')  # a crash mid-write, past the checkpoint
    with caplog.at_level(logging.WARNING):
        summary = run_jobs(jobs, "tiny", Store(tmp_path / "r"))[jobs[0].id]
    assert summary.status == "finished"
    assert f"{d.metrics} line 6 is corrupt" in caplog.text and "restarting" not in caplog.text
    assert measured(d.read_metrics()) == measured(straight.read_metrics())


def test_metrics_cut_before_the_checkpoint_restart_the_job_saying_so(tmp_path, caplog):
    jobs, d, straight = interrupted_job(tmp_path)
    lines = d.metrics.read_text().splitlines()
    d.metrics.write_text("\n".join(lines[:2]) + "\n" + lines[2][:10])  # rounds 1, 2 and half of 3
    with caplog.at_level(logging.WARNING):
        summary = run_jobs(jobs, "tiny", Store(tmp_path / "r"))[jobs[0].id]
    assert summary.status == "finished"
    assert "line 3 is corrupt" in caplog.text and "restarting job" in caplog.text
    assert measured(d.read_metrics()) == measured(straight.read_metrics())


def test_corrupt_summary_is_named_and_the_job_reruns(tmp_path, caplog):
    suite, jobs = load_jobs(write_suite(tmp_path, tiny_suite(methods=["fedavg"])))
    run_jobs(jobs, suite.name, Store(tmp_path / "r"))
    d = JobDir(Store(tmp_path / "r"), jobs[0].id)
    d.summary.write_text('{"status": "fini')
    with caplog.at_level(logging.WARNING):
        again = run_jobs(jobs, suite.name, Store(tmp_path / "r"))[jobs[0].id]
    assert f"{d.summary} is not valid JSON" in caplog.text
    assert again.status == "finished" and not again.skipped and d.read_summary() == again
