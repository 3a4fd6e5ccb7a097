"""Each foundation method's rounds against an independent hand computation (tests/reference_math.py):
tiny logistic model, full-batch gradients, two clients of different sizes (weighted average)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reference_math import local_sgd
from fedtest import job_config, tiny_simulation

D, C = 4, 3
RNG = np.random.default_rng(7)
X = RNG.normal(size=(8, D)).astype(np.float32)
Y = np.array([0, 1, 2, 1, 0, 2, 2, 1])
CLIENTS = [[0, 1, 2], [3, 4, 5, 6, 7]]  # n = 3 and 5: weights 3/8, 5/8
WEIGHTS = np.array([3, 5]) / 8
LOCAL = {"steps": 2, "batch_size": 100, "lr": 0.1, "lr_decay": 0.9, "weight_decay": 1e-3, "clip_norm": 0.5}


def simulate(method, rounds):
    job = job_config(method, rounds=rounds, num_clients=2, participation={"rate": 1.0}, local=LOCAL)
    sim = tiny_simulation(job, torch.from_numpy(X), torch.from_numpy(Y), CLIENTS, C)
    thetas = []
    for t in range(rounds):
        sim.run_round(t)
        w = sim.spec.unflatten(sim.progress.theta)
        thetas.append((w["fc.weight"].numpy().astype(np.float64), w["fc.bias"].numpy().astype(np.float64)))
    return thetas


def client_updates(W, b, lr, prox_mu=0.0):
    """Δ_i = w_K − start for both clients, each trained from (W, b) with prox toward it."""
    out = []
    for idx in CLIENTS:
        Wi, bi = local_sgd(W, b, X[idx].astype(np.float64), Y[idx], LOCAL["steps"], lr, LOCAL["weight_decay"],
                           LOCAL["clip_norm"], prox_mu, anchor=(W, b))
        out.append((Wi - W, bi - b))
    return out


def mean(updates):
    return sum(w * u[0] for w, u in zip(WEIGHTS, updates)), sum(w * u[1] for w, u in zip(WEIGHTS, updates))


def close(actual, expected):
    np.testing.assert_allclose(actual[0], expected[0], atol=1e-6)
    np.testing.assert_allclose(actual[1], expected[1], atol=1e-6)


ZERO = (np.zeros((C, D)), np.zeros(C))
LR0, LR1 = LOCAL["lr"], LOCAL["lr"] * LOCAL["lr_decay"]


def test_fedavg_is_weighted_average_of_local_sgd():
    (theta1, theta2) = simulate("fedavg", 2)
    d1 = mean(client_updates(*ZERO, LR0))
    expected1 = (ZERO[0] + d1[0], ZERO[1] + d1[1])
    close(theta1, expected1)
    d2 = mean(client_updates(*expected1, LR1))  # round decay: η_1 = η_0 · d
    close(theta2, (expected1[0] + d2[0], expected1[1] + d2[1]))


def test_fedprox_pulls_toward_the_received_model():
    job_method = {"preset": "fedprox", "client": {"prox": {"mu": 0.5}}}
    (theta1, theta2) = simulate(job_method, 2)
    d1 = mean(client_updates(*ZERO, LR0, prox_mu=0.5))
    e1 = (d1[0], d1[1])
    close(theta1, e1)
    d2 = mean(client_updates(*e1, LR1, prox_mu=0.5))
    close(theta2, (e1[0] + d2[0], e1[1] + d2[1]))


def test_fedavgm_server_momentum():
    beta = 0.6
    (theta1, theta2) = simulate({"preset": "fedavgm", "server": {"beta": beta}}, 2)
    m1 = mean(client_updates(*ZERO, LR0))
    e1 = (m1[0], m1[1])
    close(theta1, e1)
    d2 = mean(client_updates(*e1, LR1))
    m2 = (beta * m1[0] + d2[0], beta * m1[1] + d2[1])
    close(theta2, (e1[0] + m2[0], e1[1] + m2[1]))


@pytest.mark.parametrize("halved", [True, False])
def test_fedacg_lookahead_momentum_and_regulariser(halved):
    lam, beta = 0.85, 0.3
    mu = beta if halved else 2 * beta  # the code's unhalved β‖·‖² is the paper's (2β/2)‖·‖²
    method = {"preset": "fedacg", "server": {"lam": lam}, "client": {"prox": {"mu": beta, "halved": halved}}}
    (theta1, theta2) = simulate(method, 2)
    # round 1: m = 0, so the lookahead is θ_0 itself
    d1 = mean(client_updates(*ZERO, LR0, prox_mu=mu))
    m1, e1 = d1, d1
    close(theta1, e1)
    # round 2: clients start at (and are pulled toward) x = θ_1 + λ m_1
    x = (e1[0] + lam * m1[0], e1[1] + lam * m1[1])
    d2 = mean(client_updates(*x, LR1, prox_mu=mu))
    close(theta2, (x[0] + d2[0], x[1] + d2[1]))
