"""Client loss terms (FedLC, FedNTD, FedDecorr, FedMLB, and X+ACG compositions) against hand computations."""

from __future__ import annotations

import pytest
import torch
from methods_support import (
    CLASSES,
    DIM,
    TwoStageMLP,
    ce,
    client_xy,
    close,
    logistic_logits,
    make_sim,
    mlp_head,
    mlp_stage,
    random_init,
    reference_local,
)

P = DIM * CLASSES + CLASSES


def fedavg_of(sim, start, loss, steps=2):
    out, n = 0, 0
    for cid in range(sim.setup.data.num_clients):
        x, y = client_xy(sim, cid)
        out = out + len(y) * reference_local(start, x, y, steps, loss)
        n += len(y)
    return out / n


def kl(p_logits, q_logits, T=1.0):
    p, q = torch.softmax(p_logits / T, 1), torch.softmax(q_logits / T, 1)
    return (p * (p.log() - q.log())).sum(1).mean()


def test_fedlc_calibrated_logits_mask_absent_classes():
    theta0, tau = random_init(P), 0.7
    sim = make_sim({"preset": "fedlc", "client": {"lc": {"tau": tau}}}, sizes=(3, 5, 4), init=theta0)
    sim.run_round(0)
    expected, n = 0, 0
    for cid in range(3):
        x, y = client_xy(sim, cid)
        counts = torch.bincount(y, minlength=CLASSES).double()
        present = counts > 0

        def loss(w, xx, yy):
            z = logistic_logits(w, xx)[:, present] - tau * counts[present] ** -0.25
            labels = torch.cumsum(present.long(), 0)[yy] - 1  # positions among the present classes
            return ce(z, labels)

        expected = expected + len(y) * reference_local(theta0, x, y, 2, loss)
        n += len(y)
    assert any((torch.bincount(client_xy(sim, c)[1], minlength=CLASSES) == 0).any() for c in range(3))
    assert close(sim.progress.theta, expected / n)


@pytest.mark.parametrize("variant,ce_weight", [("one_minus_beta", 0.7), ("one", 1.0)])
def test_fedntd_not_true_distillation(variant, ce_weight):
    theta0, beta, T = random_init(P), 0.3, 2.0
    sim = make_sim(
        {"preset": "fedntd", "client": {"ntd": {"beta": beta, "temperature": T, "ce_weight": variant}}}, init=theta0
    )
    sim.run_round(0)

    def drop_true(z, y):
        return torch.stack([torch.cat([row[:k], row[k + 1 :]]) for row, k in zip(z, y.tolist())])

    def loss(w, x, y):
        z_l, z_g = logistic_logits(w, x), logistic_logits(theta0.double(), x)
        return ce_weight * ce(z_l, y) + beta * kl(drop_true(z_g, y), drop_true(z_l, y), T)

    assert close(sim.progress.theta, fedavg_of(sim, theta0.double(), loss))


def mlp_features(w, x):
    return mlp_stage(w, 1, mlp_stage(w, 0, x))


def test_feddecorr_penalty_on_features():
    beta = 0.5
    model = TwoStageMLP()
    theta0 = torch.nn.utils.parameters_to_vector(model.parameters()).detach().double()
    sim = make_sim({"preset": "feddecorr", "client": {"decorr": {"beta": beta}}}, model=model)
    sim.run_round(0)

    def loss(w, x, y):
        z = mlp_features(w, x)
        d = z.shape[1]
        zs = (z - z.mean(0)) / (((z - z.mean(0)) ** 2).mean(0) + 1e-8).sqrt()
        corr = zs.T @ zs / len(z)
        off = sum(corr[a, b] ** 2 for a in range(d) for b in range(d) if a != b)
        return ce(mlp_head(w, z), y) + beta * off / d**2

    assert close(sim.progress.theta, fedavg_of(sim, theta0, loss))


@pytest.mark.parametrize("detach", [False, True])
def test_fedmlb_hybrid_paths_through_frozen_global_blocks(detach):
    l1, l2, T = 0.6, 0.8, 2.0
    model = TwoStageMLP()
    theta0 = torch.nn.utils.parameters_to_vector(model.parameters()).detach().double()
    sim = make_sim(
        {
            "preset": "fedmlb",
            "client": {"mlb": {"lambda_ce": l1, "lambda_kl": l2, "temperature": T, "detach_hybrid_target": detach}},
        },
        model=model,
    )
    sim.run_round(0)

    def loss(w, x, y):
        h0 = mlp_stage(w, 0, x)
        h1 = mlp_stage(w, 1, h0)
        main = mlp_head(w, h1)
        g = theta0  # the received model's blocks: a constant, so no gradient reaches them
        hybrids = [mlp_head(g, mlp_stage(g, 1, h0)), mlp_head(g, h1)]
        targets = [hb.detach() if detach else hb for hb in hybrids]
        L = len(hybrids)
        return ce(main, y) + l1 / L * sum(ce(hb, y) for hb in hybrids) + l2 / L * sum(kl(tg, main, T) for tg in targets)

    assert close(sim.progress.theta, fedavg_of(sim, theta0, loss))


def test_fedntd_plus_acg_composes_ntd_with_lookahead_regulariser():
    theta0, lam, mu, beta = random_init(P), 0.85, 1e-2, 0.3
    sim = make_sim("fedntd+acg", init=theta0)
    m, theta = torch.zeros(P).double(), theta0.double()

    def drop_true(z, y):
        keep = torch.ones_like(z, dtype=torch.bool)
        keep[torch.arange(len(y)), y] = False
        return z[keep].view(len(y), -1)

    for t in range(2):
        sim.run_round(t)
        x0 = theta + lam * m
        loss = lambda w, x, y, x0=x0: (
            (1 - beta) * ce(logistic_logits(w, x), y)
            + beta * kl(drop_true(logistic_logits(x0, x), y), drop_true(logistic_logits(w, x), y))
            + 0.5 * mu * ((w - x0) ** 2).sum()
        )
        delta = fedavg_of(sim, x0, loss) - x0
        m, theta = lam * m + delta, x0 + delta
        assert close(sim.progress.theta, theta)
