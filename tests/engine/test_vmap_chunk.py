"""vmap_chunk chosen from memory (engine/vmap_chunk.py): the tracker's bytes, the arithmetic of the
choice, the same numbers whatever the chunk, an explicit vmap_chunk winning, and the record."""

from __future__ import annotations

import pytest
import torch
from fedtest import tiny_suite, write_suite
from vec_support import ATOL, chunk_sizes, make_jobs, run

from benchmark.engine import vmap_chunk
from benchmark.engine.peak_memory import PeakTensorMemory
from benchmark.errors import UserError
from benchmark.run.job_runner import run_job
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

MIB = 2**20
FEDPROX = {"preset": "fedprox", "client": {"prox": {"mu": 0.01}}}


def test_the_tracker_counts_new_storages_while_they_live():
    x = torch.randn(256, 1024, requires_grad=True)  # 1 MiB, allocated before: not counted
    with PeakTensorMemory() as memory:
        y = (x * 2).relu()  # two new MiB, the product freed once relu has its output
        view = y[1:]  # a view: nothing new
        x.detach().mul_(0.5)  # in place on an older tensor: nothing new
        assert memory.live == MIB and memory.peak == 2 * MIB
        y.sum().backward()  # x.grad and the backward's temporaries
        del y, view
    assert memory.peak >= 3 * MIB
    assert memory.live == MIB  # x.grad is what is left


def test_the_chunk_fits_the_budget(monkeypatch):
    monkeypatch.setenv(vmap_chunk.BUDGET_ENV, "150M")
    # 5 clients keep 10 MiB each; each in a chunk adds 2 x (30 - 10) MiB: (150 - 50) / 40 -> 2
    chunk, record = vmap_chunk.choose(5, 30 * MIB, 10 * MIB, torch.device("cpu"))
    assert chunk == record["chunk"] == 2 and record["budget_from"] == "$FEDBENCH_VMAP_MEMORY=150M"
    monkeypatch.setenv(vmap_chunk.BUDGET_ENV, "1G")
    assert vmap_chunk.choose(5, 30 * MIB, 10 * MIB, torch.device("cpu"))[0] == 5  # at most the round's clients
    monkeypatch.setenv(vmap_chunk.BUDGET_ENV, "10M")
    chunk, record = vmap_chunk.choose(5, 30 * MIB, 10 * MIB, torch.device("cpu"))
    assert chunk == 1 and "not even that fits" in record["why"]


def test_on_cpu_a_chunks_step_temporaries_are_capped(monkeypatch):
    monkeypatch.delenv(vmap_chunk.BUDGET_ENV, raising=False)
    monkeypatch.setattr(vmap_chunk, "available_bytes", lambda device: 2**40)
    transient = vmap_chunk.WORKSPACE * 100 * MIB
    chunk, record = vmap_chunk.choose(1000, 110 * MIB, 10 * MIB, torch.device("cpu"))
    assert (
        chunk == int(vmap_chunk.CPU_STEP_BYTES // transient)
        and "1,048,576 MiB available on cpu" in record["budget_from"]
    )


@pytest.mark.parametrize("text, size", [("4G", 4 * 2**30), ("512M", 512 * MIB), ("1.5k", 1536), ("100", 100)])
def test_budget_sizes(text, size):
    assert vmap_chunk.parse_bytes(text) == size


@pytest.mark.parametrize("text", ["", "lots", "-1G", "0"])
def test_a_bad_budget_is_a_user_error(text):
    with pytest.raises(UserError, match="FEDBENCH_VMAP_MEMORY"):
        vmap_chunk.parse_bytes(text)


def test_a_chunk_chosen_from_memory_gives_the_unchunked_numbers(monkeypatch):
    (job,) = make_jobs([FEDPROX], participation={"mode": "fixed", "rate": 0.5})  # 5 clients a round
    whole, whole_records = run(job.config, "vectorised", vmap_chunk=5)
    monkeypatch.setenv(vmap_chunk.BUDGET_ENV, "1")  # nothing fits: chunks of one client
    sizes = chunk_sizes(monkeypatch)
    chunked, chunked_records = run(job.config, "vectorised")
    assert sizes == [1] * 5 * job.config.rounds
    record = chunked.execution.vmap_chunk
    assert (
        record["chunk"] == 1
        and record["probe_kept_bytes"] > 0
        and record["probe_peak_bytes"] > record["probe_kept_bytes"]
    )
    torch.testing.assert_close(chunked.progress.theta, whole.progress.theta, atol=ATOL, rtol=0)
    assert [r["train_loss"] for r in chunked_records] == pytest.approx(
        [r["train_loss"] for r in whole_records], abs=ATOL
    )


def test_the_probe_measures_one_client_then_the_rest_train_together(monkeypatch):
    (job,) = make_jobs(["fedavg"], participation={"mode": "fixed", "rate": 0.5})
    monkeypatch.delenv(vmap_chunk.BUDGET_ENV, raising=False)
    sizes = chunk_sizes(monkeypatch)
    sim, _ = run(job.config, "vectorised")
    assert sizes == [1, 4] + [5] * (job.config.rounds - 1)  # a tiny model: every client fits
    assert sim.execution.vmap_chunk["chunk"] == 5


def test_an_explicit_vmap_chunk_wins(monkeypatch):
    (job,) = make_jobs(["fedavg"], participation={"mode": "fixed", "rate": 0.5})
    monkeypatch.setenv(vmap_chunk.BUDGET_ENV, "1")
    sizes = chunk_sizes(monkeypatch)
    sim, _ = run(job.config, "vectorised", vmap_chunk=3)
    assert sizes == [3, 2] * job.config.rounds  # no probe
    assert sim.execution.vmap_chunk == {"chunk": 3, "why": "vmap_chunk set"}


def test_a_resumed_job_keeps_its_chunk_and_equals_a_straight_run(tmp_path, monkeypatch):
    """The chunk is part of the checkpoint: the resumed rounds train in the same chunks, no new probe."""
    suite = tiny_suite(methods=["fedavg"])
    suite["defaults"].update(rounds=6, checkpoint_every=2, execution="vectorised", participation={"rate": 1.0})
    s, (job,) = load_jobs(write_suite(tmp_path, suite))
    monkeypatch.setenv(vmap_chunk.BUDGET_ENV, "1")
    straight = run_job(job, s.name, JobDir(Store(tmp_path / "a"), job.id))
    run_job(job, s.name, JobDir(Store(tmp_path / "b"), job.id), stop_after=3)
    monkeypatch.delenv(vmap_chunk.BUDGET_ENV)  # a new probe would now choose all clients at once
    sizes = chunk_sizes(monkeypatch)
    resumed = run_job(job, s.name, JobDir(Store(tmp_path / "b"), job.id))
    assert sizes == [1] * 6 * 3  # rounds 3-5, 6 clients each, one at a time as before
    assert resumed.vmap_chunk == straight.vmap_chunk and straight.vmap_chunk["chunk"] == 1
    a, b = (torch.load(JobDir(Store(tmp_path / d), job.id).model, weights_only=True) for d in "ab")
    assert all(torch.equal(a[k], b[k]) for k in a)
