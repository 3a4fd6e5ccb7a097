"""torch's CPU thread count: `--threads` reaches torch and summary.json; without it a probe chooses."""

from __future__ import annotations

import json

import torch
from fedtest import tiny_suite, write_suite

from benchmark.cli import main
from benchmark.run.threads import candidates, usable_cores


def summaries(results) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(results.glob("tiny/*/summary.json"))]


def test_threads_flag_reaches_torch_and_the_summary(tmp_path):
    before = torch.get_num_threads()
    path, results = write_suite(tmp_path, tiny_suite(methods=["fedavg"])), tmp_path / "results"
    try:
        assert main(["run", str(path), "--no-tracking", "--results-dir", str(results), "--threads", "3"]) == 0
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)
    assert [s["threads"] for s in summaries(results)] == [{"count": 3, "chosen_by": "--threads"}]


def test_without_the_flag_a_probe_chooses_among_the_usable_cores(tmp_path):
    path, results = write_suite(tmp_path, tiny_suite()), tmp_path / "results"
    before = torch.get_num_threads()
    try:
        assert main(["run", str(path), "--no-tracking", "--results-dir", str(results)]) == 0
    finally:
        torch.set_num_threads(before)
    chosen = [s["threads"] for s in summaries(results)]
    assert len(chosen) == 2 and all(
        t["chosen_by"] == "probe" and t["count"] in candidates(usable_cores()) for t in chosen
    )


def test_a_model_with_a_short_step_keeps_one_thread_untried(tmp_path, monkeypatch):
    from benchmark.run import threads

    tried = []
    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    monkeypatch.setattr(threads.torch, "set_num_threads", tried.append)
    monkeypatch.setattr(threads, "SHORT_STEP", float("inf"))
    monkeypatch.setattr(threads, "_probed", {})  # an earlier test's probe of this model would be reused
    path, results = write_suite(tmp_path, tiny_suite(methods=["fedavg"])), tmp_path / "results"
    assert main(["run", str(path), "--no-tracking", "--results-dir", str(results)]) == 0
    assert tried[:1] == [1] and 2 not in tried and 4 not in tried
    assert [s["threads"] for s in summaries(results)] == [{"count": 1, "chosen_by": "probe"}]


def test_candidates_double_up_to_the_cores():
    assert candidates(1) == [1] and candidates(2) == [1, 2] and candidates(6) == [1, 2, 4, 6]


def test_zero_threads_is_a_clear_error(tmp_path, capsys):
    path = write_suite(tmp_path, tiny_suite())
    assert main(["run", str(path), "--no-tracking", "--results-dir", str(tmp_path), "--threads", "0"]) == 2
    assert "--threads" in capsys.readouterr().err


def test_the_batched_fedac_engine_runs_at_one_thread_unless_told(tmp_path, monkeypatch):
    from engine.test_fedac_batched import shared_suite

    from benchmark.protocols.fedac import FedAcProtocol
    from benchmark.run import threads
    from benchmark.run.job_runner import run_job
    from benchmark.run.protocol_batches import ProtocolBatches
    from benchmark.run.results import JobDir
    from benchmark.suite.expand import expand

    before = torch.get_num_threads()
    try:
        for requested, expected in [(None, FedAcProtocol.threads), (2, {"count": 2, "chosen_by": "--threads"})]:
            threads.request(requested)
            jobs = expand(shared_suite("fedac1", lrs=[0.05]))
            batched = ProtocolBatches(jobs)
            summary = run_job(
                jobs[0], "s", JobDir(tmp_path / str(requested), jobs[0].id), simulation_for=batched.simulation_for
            )
            assert summary["threads"] == expected and torch.get_num_threads() == expected["count"]
    finally:
        threads.request(None)
        torch.set_num_threads(before)
