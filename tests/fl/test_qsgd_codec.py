"""The FedPAQ quantiser: unbiased, honest byte counts, levels on the s-grid; FedPAQ rounds."""

from __future__ import annotations

import math

import torch
from methods_support import CLASSES, DIM, make_sim, random_init

from benchmark.fl.flat import ParamSpec
from benchmark.fl.qsgd import Qsgd, QsgdParams

SPEC = ParamSpec(("w", "b"), (torch.Size([7, 5]), torch.Size([5])))


def codec(**kw) -> Qsgd:
    return Qsgd(QsgdParams(**kw))


def test_unbiased_over_many_draws():
    v = torch.randn(SPEC.total, generator=torch.Generator().manual_seed(0))
    q, gen = codec(bits=2), torch.Generator().manual_seed(1)
    draws = torch.stack([q.transmit(v, SPEC, gen)[0] for _ in range(1500)])
    # per-element std of Q is ≤ ‖v‖/s; the mean of 1500 draws is within 5 standard errors
    tol = 5 * v[:35].norm().item() / 3 / math.sqrt(1500)
    assert (draws.mean(0) - v).abs().max().item() < tol
    assert not torch.equal(draws[0], draws[1])  # it is random


def test_values_lie_on_the_level_grid_with_the_right_sign():
    v = torch.randn(SPEC.total, generator=torch.Generator().manual_seed(2))
    bits = 3
    out, _ = codec(bits=bits).transmit(v, SPEC, torch.Generator().manual_seed(0))
    s = 2**bits - 1
    for sl in (slice(0, 35), slice(35, 40)):
        levels = out[sl].abs() * s / v[sl].norm()
        assert torch.allclose(levels, levels.round(), atol=1e-4)
        exact = v[sl].abs() * s / v[sl].norm()
        assert ((levels.round() == exact.floor()) | (levels.round() == exact.floor() + 1)).all()
        nonzero = out[sl] != 0
        assert torch.equal(out[sl][nonzero].sign(), v[sl][nonzero].sign())


def test_byte_count_matches_bits():
    v = torch.randn(SPEC.total)
    for bits in (1, 2, 4, 8):
        payload = codec(bits=bits).encode(v, SPEC, torch.Generator().manual_seed(0))
        expected = 4 * 2 + math.ceil(35 * (1 + bits) / 8) + math.ceil(5 * (1 + bits) / 8)
        assert codec(bits=bits).nbytes(payload) == expected


def test_keep_1d_sends_biases_exactly():
    v = torch.randn(SPEC.total)
    q = codec(bits=4, keep_1d=True)
    payload = q.encode(v, SPEC, torch.Generator().manual_seed(0))
    assert q.nbytes(payload) == 4 + math.ceil(35 * 5 / 8) + 5 * 4
    assert torch.equal(q.decode(payload, SPEC)[35:], v[35:])


def test_zero_tensor_stays_zero():
    out, _ = codec().transmit(torch.zeros(SPEC.total), SPEC, torch.Generator())
    assert torch.equal(out, torch.zeros(SPEC.total))


def test_fedpaq_round_uploads_quantised_deltas():
    theta0 = random_init(DIM * CLASSES + CLASSES)
    paq, avg = make_sim("fedpaq", init=theta0), make_sim("fedavg", init=theta0)
    paq.run_round(0), avg.run_round(0)
    per_client = 4 * 2 + math.ceil(DIM * CLASSES * 5 / 8) + math.ceil(CLASSES * 5 / 8)
    assert paq.progress.bytes_up == 3 * per_client
    assert paq.progress.bytes_down == avg.progress.bytes_down
    # quantisation error is bounded by ‖Δ‖/s per element, relative to FedAvg's average
    assert not torch.equal(paq.progress.theta, avg.progress.theta)
    assert (paq.progress.theta - avg.progress.theta).abs().max() < (avg.progress.theta - theta0).norm()
