"""Stateful methods (FedDyn, SCAFFOLD, MOON, FedDC) over two rounds with different participants,
against hand computations that keep every client's state explicitly."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from methods_support import (
    CLASSES,
    DIM,
    LR,
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

from benchmark.data.participation import sample_clients

SIZES = (5, 4, 6, 3)
P = DIM * CLASSES + CLASSES
K = 2


def seed_with_changing_clients() -> tuple[int, list[list[int]]]:
    """A seed whose rounds 0 and 1 share one client (state reused) and differ in another (fresh state)."""
    from benchmark.job.settings import Participation

    cfg = Participation(rate=0.5)
    for seed in range(100):
        rounds = [sample_clients(seed, t, len(SIZES), cfg) for t in range(2)]
        if len(set(rounds[0]) & set(rounds[1])) == 1:
            return seed, rounds
    raise AssertionError("no suitable seed")


SEED, CHOSEN = seed_with_changing_clients()


def sim_for(method, **kw):
    return make_sim(method, sizes=SIZES, steps=K, rate=0.5, seed=SEED, **kw)


def test_feddyn_two_rounds():
    alpha = 0.1
    theta0 = random_init(P)
    sim = sim_for({"preset": "feddyn", "server": {"alpha": alpha}, "client": {"dyn": {"alpha": alpha}}}, init=theta0)
    theta, h, h_i = theta0.double(), torch.zeros(P).double(), {}
    for t, chosen in enumerate(CHOSEN):
        sim.run_round(t)
        ws = []
        for cid in chosen:
            x, y = client_xy(sim, cid)
            hi = h_i.get(cid, torch.zeros(P).double())
            loss = lambda w, xx, yy, hi=hi, th=theta: (
                ce(logistic_logits(w, xx), yy) - (hi * w).sum() + 0.5 * alpha * ((w - th) ** 2).sum()
            )
            w = reference_local(theta, x, y, K, loss)
            h_i[cid] = hi - alpha * (w - theta)
            ws.append(w)
        h = h - alpha / len(SIZES) * sum(w - theta for w in ws)
        theta = sum(ws) / len(ws) - h / alpha
        assert close(sim.progress.theta, theta)
    for cid, hi in h_i.items():
        assert close(sim.setup.clients.get(cid, "cpu")["dyn.h"], hi)


def test_scaffold_two_rounds_and_message_bytes():
    theta0 = random_init(P)
    sim = sim_for("scaffold", init=theta0)
    theta, c, c_i = theta0.double(), torch.zeros(P).double(), {}
    for t, chosen in enumerate(CHOSEN):
        sim.run_round(t)
        new_models, dc, n = [], [], []
        for cid in chosen:
            x, y = client_xy(sim, cid)
            ci = c_i.get(cid, torch.zeros(P).double())
            w = reference_local(
                theta,
                x,
                y,
                K,
                lambda w, xx, yy: ce(logistic_logits(w, xx), yy),
                direction=lambda g, w, ci=ci, c=c: g - ci + c,
            )
            c_new = ci - c + (theta - w) / (K * LR)
            dc.append(c_new - ci)
            c_i[cid] = c_new
            new_models.append(w), n.append(len(y))
        theta = sum(w * k for w, k in zip(new_models, n)) / sum(n)
        c = c + sum(dc) / len(SIZES)
        assert close(sim.progress.theta, theta)
        assert close(sim.progress.server_state["c"], c)
    # two model-sized float32 messages each way per participant per round
    assert sim.progress.bytes_down == sim.progress.bytes_up == 2 * 2 * 2 * P * 4


def mlp_forward(w, x):
    z = mlp_stage(w, 1, mlp_stage(w, 0, x))
    return mlp_head(w, z), z


def test_moon_two_rounds_keeps_previous_local_model():
    mu, tau = 1.0, 0.5
    model = TwoStageMLP()
    theta0 = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    p = theta0.numel()
    sim = sim_for({"preset": "moon", "client": {"moon": {"mu": mu, "tau": tau}}}, model=model)
    theta, prev = theta0.double(), {}
    for t, chosen in enumerate(CHOSEN):
        sim.run_round(t)
        models, n = [], []
        for cid in chosen:
            x, y = client_xy(sim, cid)
            z_g = mlp_forward(theta, x.double())[1]
            z_p = mlp_forward(prev.get(cid, theta), x.double())[1]

            def loss(w, xx, yy, z_g=z_g, z_p=z_p):
                logits, z = mlp_forward(w, xx)
                pos = torch.exp(F.cosine_similarity(z, z_g, dim=1) / tau)
                neg = torch.exp(F.cosine_similarity(z, z_p, dim=1) / tau)
                return ce(logits, yy) + mu * (-torch.log(pos / (pos + neg))).mean()

            w = reference_local(theta, x, y, K, loss)
            prev[cid] = w
            models.append(w), n.append(len(y))
        theta = sum(w * k for w, k in zip(models, n)) / sum(n)
        assert close(sim.progress.theta, theta)
    assert set(prev) == {c for r in CHOSEN for c in r} and p == theta.numel()
    for cid, w in prev.items():
        assert close(sim.setup.clients.get(cid, "cpu")["moon.prev"], w)


def test_feddc_two_rounds():
    alpha = 0.1
    theta0 = random_init(P)
    sim = sim_for({"preset": "feddc", "client": {"feddc": {"alpha": alpha}}}, init=theta0)
    N, total = len(SIZES), sum(SIZES)
    theta, G = theta0.double(), torch.zeros(P).double()
    h_i = {c: torch.zeros(P).double() for c in range(N)}
    G_i = {c: torch.zeros(P).double() for c in range(N)}
    for t, chosen in enumerate(CHOSEN):
        sim.run_round(t)
        ws, dG = [], []
        for cid in chosen:
            x, y = client_xy(sim, cid)
            wt = len(y) * N / total
            anchor, lin = theta - h_i[cid], G / wt - G_i[cid]
            loss = lambda w, xx, yy, a=anchor, l=lin, wt=wt: (
                ce(logistic_logits(w, xx), yy) + 0.5 * alpha / wt * ((w - a) ** 2).sum() + (w * l).sum()
            )
            w = reference_local(theta, x, y, K, loss)
            delta = w - theta
            h_i[cid] = h_i[cid] + delta
            g_new = G_i[cid] - G / wt - delta / (K * LR)
            dG.append(wt * (g_new - G_i[cid]))
            G_i[cid] = g_new
            ws.append(w)
        G = G + sum(dG) / N
        theta = sum(ws) / len(ws) + sum(h_i.values()) / N
        assert close(sim.progress.theta, theta)
        assert close(sim.progress.server_state["G"], G)
    # θ and G down, Δ and the G-correction up
    assert sim.progress.bytes_down == sim.progress.bytes_up == 2 * 2 * 2 * P * 4


def test_fedcm_bytes_two_down_one_up():
    sim = make_sim("fedcm")
    sim.run_round(0)
    assert (sim.progress.bytes_down, sim.progress.bytes_up) == (3 * 2 * P * 4, 3 * P * 4)


def test_scaffold_normalises_by_the_lrs_actually_used_with_intra_round_decay():
    """Two epochs of one full-batch step, lr η then η·d: c_i⁺ = (x − w_K)/(η + η·d), not /(K·η)."""
    from fedtest import job_config, tiny_simulation

    eta, d = 0.1, 0.5
    job = job_config(
        "scaffold",
        rounds=1,
        num_clients=1,
        participation={"rate": 1.0},
        local={"epochs": 2, "batch_size": 16, "lr": eta, "lr_decay": d, "intra_round_decay": True},
    )
    x, y = torch.randn(6, 3), torch.tensor([0, 1, 2, 0, 1, 2])
    sim = tiny_simulation(job, x, y, [list(range(6))], 3)
    theta0 = sim.progress.theta.clone()
    sim.run_round(0)
    expected = (theta0 - sim.progress.theta) / (eta + eta * d)  # one client: w_K = θ_1, c = c_i = 0
    assert torch.allclose(sim.setup.clients.get(0, "cpu")["scaffold.c"], expected, atol=1e-6)
