"""Server rules (FedAvg, FedProx, FedAvgM, FedAdam, FedCM, FedACG, FedAGM) against hand computations
(the one rule-test harness: tests/fl/methods_support.py's reference_local), with clipping, round
lr decay and weight decay on clients of unequal sizes."""

from __future__ import annotations

import numpy as np
import torch
from methods_support import (
    CLASSES,
    DIM,
    LR,
    ce,
    client_xy,
    close,
    logistic_logits,
    make_sim,
    random_init,
    reference_local,
)

P = DIM * CLASSES + CLASSES


def local_models(sim, start, loss_fn, steps=2, direction=None, **local):
    """Every client's w_K and n_i (all clients participate); `local`: reference_local's lr, clip_norm."""
    out = []
    for cid in range(sim.setup.data.num_clients):
        x, y = client_xy(sim, cid)
        out.append((reference_local(start, x, y, steps, loss_fn, direction, **local), len(y)))
    return out


def weighted_mean(pairs):
    n = sum(k for _, k in pairs)
    return sum(w * (k / n) for w, k in pairs)


def plain_ce(w, x, y):
    return ce(logistic_logits(w, x), y)


def test_fedavg_one_step_matches_numpy_gradient():
    sim = make_sim("fedavg", steps=1, init=torch.zeros(P))
    sim.run_round(0)
    expected, total = np.zeros(P), 0
    for cid in range(3):
        x, y = (t.numpy() for t in client_xy(sim, cid))
        probs = np.full((len(y), CLASSES), 1 / CLASSES)  # zero model: uniform softmax
        err = probs - np.eye(CLASSES)[y]
        grad = np.concatenate([(err.T @ x / len(y)).ravel(), err.mean(0)])
        expected += len(y) * (-LR * grad)  # weight decay of a zero vector is zero
        total += len(y)
    assert np.allclose(sim.progress.theta.numpy(), expected / total, atol=1e-6)


def test_fedavg_two_rounds_weighted_average():
    theta0 = random_init(P)
    sim = make_sim("fedavg", init=theta0)
    sim.run_round(0)
    theta1 = weighted_mean(local_models(sim, theta0, plain_ce))
    assert close(sim.progress.theta, theta1)
    sim.run_round(1)
    assert close(sim.progress.theta, weighted_mean(local_models(sim, theta1, plain_ce)))


def test_fedavg_clips_the_loss_gradient_and_decays_the_lr_per_round():
    theta0, clip, decay = random_init(P, scale=3.0), 0.5, 0.9
    sim = make_sim("fedavg", init=theta0, local={"clip_norm": clip, "lr_decay": decay})
    theta = theta0
    for t in range(2):
        sim.run_round(t)
        unclipped = weighted_mean(local_models(sim, theta, plain_ce, lr=LR * decay**t))
        theta = weighted_mean(local_models(sim, theta, plain_ce, lr=LR * decay**t, clip_norm=clip))
        assert close(sim.progress.theta, theta) and not close(unclipped, theta)  # the clip was active


def test_fedprox_halved_and_unhalved():
    theta0 = random_init(P)
    for halved, scale in ((True, 0.5), (False, 1.0)):
        mu = 0.3
        sim = make_sim({"preset": "fedprox", "client": {"prox": {"mu": mu, "halved": halved}}}, init=theta0)
        sim.run_round(0)
        loss = lambda w, x, y: ce(logistic_logits(w, x), y) + scale * mu * ((w - theta0.double()) ** 2).sum()
        assert close(sim.progress.theta, weighted_mean(local_models(sim, theta0, loss)))


def test_fedavgm_momentum_two_rounds():
    theta0, beta = random_init(P), 0.6
    sim = make_sim({"preset": "fedavgm", "server": {"beta": beta}}, init=theta0)
    sim.run_round(0)
    m1 = weighted_mean(local_models(sim, theta0, plain_ce)) - theta0
    theta1 = theta0 + m1
    assert close(sim.progress.theta, theta1)
    sim.run_round(1)
    m2 = beta * m1 + (weighted_mean(local_models(sim, theta1, plain_ce)) - theta1)
    assert close(sim.progress.theta, theta1 + m2)


def test_fedadam_two_rounds():
    theta0 = random_init(P)
    sim = make_sim("fedadam", init=theta0)
    b1, b2, tau, eta = 0.9, 0.99, 1e-3, 0.01
    m, v, theta = torch.zeros(P).double(), torch.full((P,), tau**2).double(), theta0.double()
    for t in range(2):
        sim.run_round(t)
        d = weighted_mean(local_models(sim, theta, plain_ce)) - theta
        m = b1 * m + (1 - b1) * d
        v = b2 * v + (1 - b2) * d**2
        theta = theta + eta * m / (v.sqrt() + tau)
        assert close(sim.progress.theta, theta)


def test_fedadam_per_step_is_fedcms_convention():
    """FedCM's FedAdam: Adam on Δ̄/(ηK), step multiplied by ηK (its η_g = 0.1, τ = 0.01 as printed)."""
    theta0, K = random_init(P), 2
    b1, b2, tau, eta = 0.9, 0.99, 0.01, 0.1
    sim = make_sim(
        {"preset": "fedadam", "server": {"per_step": True, "global_lr": eta, "tau": tau}}, init=theta0, steps=K
    )
    m, v, theta = torch.zeros(P).double(), torch.full((P,), tau**2).double(), theta0.double()
    for t in range(2):
        sim.run_round(t)
        g = (weighted_mean(local_models(sim, theta, plain_ce, K)) - theta) / (LR * K)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g**2
        theta = theta + eta * LR * K * m / (v.sqrt() + tau)
        assert close(sim.progress.theta, theta)


def test_fedcm_direction_two_rounds():
    theta0, alpha, K = random_init(P), 0.3, 2
    sim = make_sim({"preset": "fedcm", "client": {"fedcm": {"alpha": alpha}}}, init=theta0, steps=K)
    D, theta = torch.zeros(P).double(), theta0.double()
    for t in range(2):
        sim.run_round(t)
        mix = lambda g, w, D=D: alpha * g + (1 - alpha) * D
        models = local_models(sim, theta, plain_ce, K, mix)
        n = sum(k for _, k in models)
        D = -sum((k / n) * (w - theta) / (LR * K) for w, k in models)
        theta = theta - LR * K * D
        assert close(sim.progress.theta, theta)
        assert close(sim.progress.server_state["D"], D)


def acg_reference(theta0, lam, beta, rounds, sim_factory, halved=True):
    """θ and m of FedACG's rounds: clients start at, and are pulled toward, the lookahead x = θ + λm
    (the code's unhalved β‖·‖² is the paper's (2β/2)‖·‖²)."""
    sim = sim_factory()
    m, theta, scale = torch.zeros(P).double(), theta0.double(), 0.5 if halved else 1.0
    for t in range(rounds):
        sim.run_round(t)
        x = theta + lam * m
        loss = lambda w, xx, y, x=x: ce(logistic_logits(w, xx), y) + scale * beta * ((w - x) ** 2).sum()
        delta = weighted_mean(local_models(sim, x, loss)) - x
        m = lam * m + delta
        theta = x + delta
        assert close(sim.progress.theta, theta)
    return sim, theta, m


def test_fedacg_two_rounds_and_eval_uses_theta():
    theta0, lam, beta = random_init(P), 0.85, 0.01
    sim, theta, m = acg_reference(theta0, lam, beta, 2, lambda: make_sim("fedacg", init=theta0))
    # evaluation is of θ, not of the lookahead θ + λm that the next round broadcasts
    acc, loss = sim.evaluate()
    x, y = sim.setup.data.src.test_x.double(), sim.setup.data.src.test_y
    assert abs(loss - ce(logistic_logits(theta, x), y).item()) < 1e-5
    lookahead_loss = ce(logistic_logits(theta + lam * m, x), y).item()
    assert abs(loss - lookahead_loss) > 1e-4
    assert abs(acc - 100 * (logistic_logits(theta, x).argmax(1) == y).double().mean().item()) < 1e-9


def test_fedacg_unhalved_regulariser():
    theta0, lam, beta = random_init(P), 0.85, 0.3
    method = {"preset": "fedacg", "server": {"lam": lam}, "client": {"prox": {"mu": beta, "halved": False}}}
    acg_reference(theta0, lam, beta, 2, lambda: make_sim(method, init=theta0), halved=False)


def test_fedacg_with_zero_lambda_and_beta_is_fedavg():
    theta0 = random_init(P)
    acg = make_sim({"preset": "fedacg", "server": {"lam": 0.0}, "client": {"prox": {"mu": 0.0}}}, init=theta0)
    avg = make_sim("fedavg", init=theta0)
    for t in range(3):
        acg.run_round(t), avg.run_round(t)
        assert torch.equal(acg.progress.theta, avg.progress.theta)


def test_fedagm_two_rounds():
    theta0, lam, tau, alpha, beta = random_init(P), 0.85, 0.7, 0.8, 1e-2
    sim = make_sim(
        {"preset": "fedagm", "server": {"tau": tau}, "client": {"ce_scale": {"alpha": alpha}, "prox": {"mu": beta}}},
        init=theta0,
    )
    m, theta = torch.zeros(P).double(), theta0.double()
    for t in range(2):
        sim.run_round(t)
        x = theta + lam * m
        loss = lambda w, xx, y, x=x: alpha * ce(logistic_logits(w, xx), y) + 0.5 * beta * ((w - x) ** 2).sum()
        models = [w for w, _ in local_models(sim, x, loss)]
        new = tau * sum(models) / len(models) + (1 - tau) * x  # plain mean over participants (unequal sizes)
        m, theta = new - theta, new
        assert close(sim.progress.theta, theta)
