"""execution: vectorised must give the sequential path's numbers, or refuse the job clearly.

Tolerance: atol 1e-5 on parameters and metrics. vmap turns per-client matmuls/convolutions
into batched kernels whose float32 reduction order differs from the unbatched ones, so results
agree to a few ulps per step (observed max |Δθ| ≤ 6e-8 after 3 rounds, logistic and CNN), not
bit for bit; 1e-5 leaves headroom for other BLAS builds and longer runs. In float64 the two
paths agree to ~1e-16 (test below). Larger ReLU nets can amplify a float32 ulp into a visible
gap when an activation crosses zero (femnist_cnn, 10 steps: up to 4e-4 on one random draw).
"""

from __future__ import annotations

import pytest
import torch
from vec_support import (
    ATOL,
    assert_same,
    image_simulation,
    make_jobs,
    run,
    sequential_outcomes,
    vectorised_outcomes,
    with_term,
)

from benchmark.engine.setup import build_simulation
from benchmark.engine.trainers.by_execution import trainer_for
from benchmark.engine.trainers.vectorised import NotVectorisable, VectorisedTrainer
from benchmark.fl.base import ClientTerm

METHODS = ["fedavg", {"preset": "fedprox", "client": {"prox": {"mu": 0.01}}}, "fedavgm", "fedacg"]


@pytest.mark.parametrize("job", make_jobs(METHODS), ids=lambda j: j.method_label)
def test_logistic_matches_sequential(job):
    assert_same(job.config)


def test_intra_round_decay_two_epochs_and_chunking_match_sequential():
    (job,) = make_jobs(["fedacg"], local={"epochs": 2, "intra_round_decay": True, "lr_decay": 0.5})
    assert_same(job.config)
    chunked = build_simulation(job.config)
    rnd, chosen = chunked.round_info(0), [0, 3, 5]
    received = {"model": chunked.progress.theta}
    whole = vectorised_outcomes(chunked, chosen, rnd, received, vmap_chunk=len(chosen))
    pieces = vectorised_outcomes(chunked, chosen, rnd, received, vmap_chunk=2)
    assert [o.client_id for o in pieces] == chosen
    for a, b in zip(whole, pieces):
        torch.testing.assert_close(a.final, b.final, atol=ATOL, rtol=0)
        assert a.loss == pytest.approx(b.loss, abs=ATOL)


@pytest.mark.parametrize("job", make_jobs(METHODS), ids=lambda j: j.method_label)
def test_small_cnn_matches_sequential(job):
    assert_same(job.config, image_simulation)


def test_float64_agrees_to_rounding_so_float32_gaps_are_reduction_order():
    """In float64 one round's clients agree to ~1e-16: the same math, only summation order differs."""
    (job,) = make_jobs(["fedacg"], local={"epochs": 3})
    sim = image_simulation(job.config, torch.float64)
    chosen, rnd, received = [0, 3, 5, 7], sim.round_info(0), {"model": sim.progress.theta}
    assert received["model"].dtype == torch.float64
    for seq, vec in zip(
        sequential_outcomes(sim, chosen, rnd, received), vectorised_outcomes(sim, chosen, rnd, received)
    ):
        torch.testing.assert_close(vec.final, seq.final, atol=1e-12, rtol=0)
        assert vec.loss == pytest.approx(seq.loss, abs=1e-6)


class ScaledStep(ClientTerm):
    """A test term using every per-client hook: vmappable loss, client-specific direction and state."""

    name = "scaled_step"
    vmappable = True

    def begin(self, ctx):
        ctx.scratch["scale"] = 1.0 + 0.1 * (ctx.client_id % 3)

    def ce_weight(self, ctx):
        return 0.5 + 0.05 * ctx.client_id

    def loss(self, ctx, w, out, x, y):
        return 1e-3 * (w - ctx.start).abs().sum() + 1e-2 * out.features.pow(2).mean()

    def direction(self, ctx, w, g):
        return g * ctx.scratch["scale"]

    def finish(self, ctx, w):
        ctx.state["seen"] = ctx.state.get("seen", torch.zeros(())) + 1
        ctx.messages["w_norm"] = w.norm().reshape(1)

    needs_features = True


def test_terms_begin_ce_weight_direction_finish_are_respected_per_client():
    (job,) = make_jobs(["fedavg"])
    _, vec = assert_same(job.config, with_term(ScaledStep(None)))  # client states compared there
    assert len(vec.setup.clients) > 0


class Opaque(ClientTerm):
    name = "opaque"


def test_non_vmappable_term_is_refused_with_advice():
    (job,) = make_jobs(["fedavg"])
    with pytest.raises(NotVectorisable, match=r"'opaque' are not vmappable.*execution: sequential"):
        run(job.config, "vectorised", with_term(Opaque(None)))


def test_unbalanced_clients_are_refused_not_run_sequentially():
    (job,) = make_jobs(
        ["fedavg"], split={"kind": "natural"}, max_samples=400, participation={"mode": "fixed", "rate": 1.0}
    )
    with pytest.raises(NotVectorisable, match=r"same local steps.*execution: sequential"):
        run(job.config, "vectorised")


def test_registered_as_an_execution_mode():
    (job,) = make_jobs(["fedavg"])
    assert isinstance(trainer_for("vectorised", build_simulation(job.config).setup), VectorisedTrainer)


def test_vmap_chunk_is_execution_only():
    (job,) = make_jobs(["fedavg"])
    (chunked,) = make_jobs(["fedavg"], vmap_chunk=3)
    assert chunked.config.vmap_chunk == 3 and chunked.id == job.id
