"""execution: auto: the first round times both trainers on its own clients, the job keeps the
faster one and records the choice; the numbers are the sequential run's (atol, see test_vectorised.py)."""

from __future__ import annotations

import json

import pytest
import torch
from fedtest import tiny_suite, write_suite
from test_vectorised import Opaque
from vec_support import ATOL, make_jobs, run, with_term

from benchmark.engine.trainers import auto
from benchmark.engine.trainers.sequential import SequentialTrainer
from benchmark.engine.trainers.vectorised import VectorisedTrainer
from benchmark.run.job_runner import run_job
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

FEDPROX = {"preset": "fedprox", "client": {"prox": {"mu": 0.01}}}


def fake_timings(monkeypatch, seconds: dict[str, float]) -> list[str]:
    """Make the probe see `seconds` per call of each trainer; returns the trainers run, in order
    (by the names of the functions they were before they became classes)."""
    ran = []
    real = auto.timed

    def timed(train, device, chosen, *args):
        trained, _ = real(train, device, chosen, *args)
        return trained, seconds[train.__self__.name] * len(chosen)

    class Sequential(SequentialTrainer):
        def train(self, *args):
            ran.append("train_sequential")
            return super().train(*args)

    class Vectorised(VectorisedTrainer):
        def train_drawn(self, *args):
            ran.append("train_vectorised_job")
            return super().train_drawn(*args)

    monkeypatch.setattr(auto, "SequentialTrainer", Sequential)
    monkeypatch.setattr(auto, "VectorisedTrainer", Vectorised)
    monkeypatch.setattr(auto, "timed", timed)
    return ran


@pytest.mark.parametrize("faster", ["sequential", "vectorised"])
def test_the_probe_chooses_the_faster_and_later_rounds_use_it(monkeypatch, faster):
    (job,) = make_jobs([FEDPROX])  # 4 clients a round, 3 rounds
    ran = fake_timings(
        monkeypatch,
        {"sequential": 1.0, "vectorised": 0.5} if faster == "vectorised" else {"sequential": 0.5, "vectorised": 1.0},
    )
    sim, records = run(job.config, "auto")
    seq, seq_records = run(job.config, "sequential")
    assert sim.execution.chosen == faster
    assert sim.execution.probe["clients"] == {"sequential": 2, "vectorised": 2}
    assert (
        ran
        == ["train_sequential", "train_vectorised_job"] + [f"train_{faster}" + ("_job" * (faster == "vectorised"))] * 2
    )
    torch.testing.assert_close(sim.progress.theta, seq.progress.theta, atol=ATOL, rtol=0)
    assert [r["test_acc"] for r in records] == pytest.approx([r["test_acc"] for r in seq_records], abs=ATOL)


def test_rounds_that_cannot_be_vectorised_train_sequentially_with_the_reason():
    (job,) = make_jobs(["fedavg"])
    sim, _ = run(job.config, "auto", with_term(Opaque(None)))
    assert sim.execution.chosen == "sequential" and "'opaque' are not vmappable" in sim.execution.probe["reason"]
    (unbalanced,) = make_jobs(
        ["fedavg"], split={"kind": "natural"}, max_samples=400, participation={"mode": "fixed", "rate": 1.0}
    )
    sim, _ = run(unbalanced.config, "auto")
    assert sim.execution.chosen == "sequential" and "different local steps" in sim.execution.probe["reason"]


def test_too_few_clients_a_round_stay_sequential():
    (job,) = make_jobs(["fedavg"], participation={"mode": "fixed", "rate": 0.3})
    sim, _ = run(job.config, "auto")
    assert sim.execution.chosen == "sequential" and "3 clients a round" in sim.execution.probe["reason"]


@pytest.mark.parametrize("execution", ["auto", "sequential", "vectorised"])
def test_summary_records_the_trainer(tmp_path, execution):
    suite = tiny_suite(methods=["fedavg"])
    suite["defaults"].update(rounds=2, execution=execution)
    s, (job,) = load_jobs(write_suite(tmp_path, suite))
    summary = run_job(job, s.name, JobDir(Store(tmp_path), job.id))
    on_disk = json.loads(JobDir(Store(tmp_path), job.id).summary.read_text())
    assert on_disk["execution"] == summary.execution
    # which local step produced the numbers, per trainer that ran (the tiny logistic: fused only client-batched)
    assert on_disk["local_step"] == summary.local_step
    expected = {"sequential": "plain", "vectorised": "fused"}
    assert {t: r["step"] for t, r in summary.local_step.items()} == {t: expected[t] for t in summary.local_step}
    assert summary.execution in summary.local_step and all(r["why"] for r in summary.local_step.values())
    # the chunk the vectorised trainer chose from memory (the tiny job: all 3 clients a round fit)
    assert on_disk["vmap_chunk"] == summary.vmap_chunk
    assert (summary.vmap_chunk or {}).get("chunk") == (3 if summary.execution == "vectorised" else None)
    if execution == "auto":
        assert summary.execution in {"sequential", "vectorised"}
        assert summary.execution_probe["round"] == 0
    else:
        assert summary.execution == execution and summary.execution_probe is None


def test_a_resumed_auto_job_keeps_its_probes_choice_and_equals_a_straight_run(tmp_path, monkeypatch):
    """Probing again on resume could choose the other trainer (another rounding): the choice is
    part of the checkpoint, so the resumed job is the straight one, bit for bit."""
    suite = tiny_suite(methods=["fedavg"])
    suite["defaults"].update(rounds=6, checkpoint_every=2, execution="auto", participation={"rate": 1.0})
    s, (job,) = load_jobs(write_suite(tmp_path, suite))
    timings = {"sequential": 0.5, "vectorised": 1.0}
    ran = fake_timings(monkeypatch, timings)
    straight = run_job(job, s.name, JobDir(Store(tmp_path / "a"), job.id))
    run_job(job, s.name, JobDir(Store(tmp_path / "b"), job.id), stop_after=3)
    timings.update(sequential=1.0, vectorised=0.5)  # a new probe would now choose vectorised
    ran.clear()
    resumed = run_job(job, s.name, JobDir(Store(tmp_path / "b"), job.id))
    assert ran == ["train_sequential"] * 3  # rounds 3-5, no probe
    assert resumed.execution == straight.execution == "sequential"
    assert resumed.execution_probe == straight.execution_probe and straight.execution_probe["round"] == 0
    a, b = (torch.load(JobDir(Store(tmp_path / d), job.id).model, weights_only=True) for d in "ab")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_checkpoint_written_before_the_choice_was_saved_still_resumes():
    (job,) = make_jobs(["fedavg"])
    sim, _ = run(job.config, "auto")
    old = {k: v for k, v in sim.state_dict().items() if k != "execution"}
    assert sim.misfit(old) is None
    sim.load_state_dict(old)
    assert sim.misfit({**old, "other": 1}) is not None
