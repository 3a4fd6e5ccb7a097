"""Running jobs into results/: files, skip-finished, exact resume, failure isolation, bytes, sampling."""

from __future__ import annotations

import json

import pytest
import torch
from fedtest import measured, tiny_suite, write_suite

from benchmark.data.participation import sample_clients
from benchmark.fl.registry import SERVER_RULES
from benchmark.job.settings import Participation
from benchmark.run.executor import run_jobs
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs


def run_suite(tmp_path, suite=None, stop_after=None, results="results"):
    s, jobs = load_jobs(write_suite(tmp_path, suite or tiny_suite()))
    return jobs, run_jobs(jobs, s.name, Store(tmp_path / results), stop_after=stop_after)


def test_results_layout_and_contents(tmp_path):
    jobs, summaries = run_suite(tmp_path)
    for job in jobs:
        d = JobDir(Store(tmp_path / "results"), job.id)
        config = json.loads(d.config.read_text())
        assert config["job_id"] == job.id and config["method"]["label"] == job.method_label
        lines = d.read_metrics()
        assert [r.round for r in lines] == [1, 2, 3, 4]
        assert set(lines[0].to_json()) == {
            "round",
            "test_acc",
            "test_loss",
            "train_loss",
            "ema_acc",
            "bytes_down",
            "bytes_up",
            "time",
            "wall_s",
        }
        s = d.read_summary()
        assert s.status == "finished" and s.final_acc == lines[-1].test_acc
        assert set(s.metrics) == {"acc@2", "rounds_to@30", "bytes_to@30"}
        state = torch.load(d.model, weights_only=True)
        assert set(state) == {"fc.weight", "fc.bias"}
        assert not d.checkpoint.exists()
        assert not list(d.path.glob(".*"))  # no temp files left behind


def test_rerun_skips_finished_jobs(tmp_path):
    jobs, _ = run_suite(tmp_path)
    stamps = {j.id: JobDir(Store(tmp_path / "results"), j.id).summary.stat().st_mtime_ns for j in jobs}
    _, again = run_suite(tmp_path)
    assert all(s.skipped for s in again.values())
    assert stamps == {j.id: JobDir(Store(tmp_path / "results"), j.id).summary.stat().st_mtime_ns for j in jobs}


@pytest.mark.parametrize("method", ["fedavg", "fedacg"])
def test_interrupted_then_resumed_equals_straight_run(tmp_path, method):
    suite = tiny_suite(methods=[method])
    suite["defaults"].update(rounds=6, checkpoint_every=2)
    jobs, straight = run_suite(tmp_path, suite, results="a")
    _, partial = run_suite(tmp_path, suite, stop_after=3, results="b")
    job = jobs[0]
    assert partial[job.id].status == "stopped" and JobDir(Store(tmp_path / "b"), job.id).checkpoint.exists()
    _, resumed = run_suite(tmp_path, suite, results="b")
    a, b = JobDir(Store(tmp_path / "a"), job.id), JobDir(Store(tmp_path / "b"), job.id)
    assert measured(a.read_metrics()) == measured(b.read_metrics())
    ta, tb = torch.load(a.model, weights_only=True), torch.load(b.model, weights_only=True)
    assert all(torch.equal(ta[k], tb[k]) for k in ta)
    assert resumed[job.id].metrics == straight[job.id].metrics


def test_a_failing_job_is_recorded_and_the_suite_goes_on(tmp_path, monkeypatch):
    acg = SERVER_RULES.get("acg")

    def explode(self, *args):
        raise RuntimeError("boom")

    monkeypatch.setattr(acg, "update", explode)
    jobs, summaries = run_suite(tmp_path)
    by_method = {j.method_label: summaries[j.id] for j in jobs}
    assert by_method["FedACG"].status == "failed" and "boom" in by_method["FedACG"].error
    assert by_method["FedAvg"].status == "finished"


def test_bytes_count_the_tensors_sent(tmp_path):
    jobs, summaries = run_suite(tmp_path, tiny_suite(methods=["fedavg"]))
    (job,) = jobs
    params = 3 * 10 + 3  # logistic: 10 features -> 3 classes
    m = 3  # 50% of 6 clients
    last = JobDir(Store(tmp_path / "results"), job.id).read_metrics()[-1]
    assert last.bytes_down == last.bytes_up == 4 * m * params * 4  # 4 rounds, float32


def test_client_sampling_depends_only_on_seed_and_round():
    fixed = Participation(mode="fixed", rate=0.1)
    a = [sample_clients(0, t, 100, fixed) for t in range(5)]
    assert a == [sample_clients(0, t, 100, fixed) for t in range(5)]
    assert all(len(c) == 10 and len(set(c)) == 10 for c in a) and a[0] != a[1]
    assert a[0] != sample_clients(1, 0, 100, fixed)
    bern = Participation(mode="bernoulli", rate=0.01)
    assert all(1 <= len(sample_clients(0, t, 20, bern)) for t in range(50))  # never empty


@pytest.mark.parametrize("store", ["memory", "memmap"])
def test_crash_between_checkpoints_resumes_exactly_for_stateful_methods(tmp_path, monkeypatch, store):
    """SCAFFOLD keeps per-client state: a crash after clients trained in round 4 (checkpoint at 2)
    must resume from the checkpoint's client states, not the newer ones."""
    suite = tiny_suite(methods=["scaffold"])
    suite["defaults"].update(rounds=6, checkpoint_every=2, client_state=store, participation={"rate": 1.0})
    jobs, straight = run_suite(tmp_path, suite, results="a")
    rule = SERVER_RULES.get("scaffold")
    update = rule.update

    def crash_in_round_4(self, theta, state, sent, up, rnd):
        if rnd.round == 3:
            raise RuntimeError("power cut")
        return update(self, theta, state, sent, up, rnd)

    monkeypatch.setattr(rule, "update", crash_in_round_4)
    _, crashed = run_suite(tmp_path, suite, results="b")
    assert crashed[jobs[0].id].status == "failed"
    monkeypatch.setattr(rule, "update", update)
    _, resumed = run_suite(tmp_path, suite, results="b")
    a, b = JobDir(Store(tmp_path / "a"), jobs[0].id), JobDir(Store(tmp_path / "b"), jobs[0].id)
    assert measured(a.read_metrics()) == measured(b.read_metrics())
    assert resumed[jobs[0].id].metrics == straight[jobs[0].id].metrics
    assert not (b.path / "client_state").exists() and not (b.path / "client_state.checkpoint").exists()
