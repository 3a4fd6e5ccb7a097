"""FedAc (Yuan & Ma, Algorithm 1) and the suboptimality metric against hand computations in numpy.

Every expected value is written from the paper's formulas here; the code under test only
produces the values compared with them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from fedtest import job_config
from methods_support import CLASSES, DIM, LR, TwoStageMLP, client_xy, make_sim, random_init

from benchmark.engine.convex import RegularisedLogistic
from benchmark.engine.trainers.vectorised import NotVectorisable
from benchmark.errors import UserError
from benchmark.fl.base import ClientTerm
from benchmark.fl.fedac import coefficients
from benchmark.fl.method import MethodProblems
from benchmark.suite.expand import job_id

P = DIM * CLASSES + CLASSES
MU = 0.05  # = local.weight_decay = FedAc's μ; large enough that w, w_md and w_ag differ visibly
K = 2


# ---- numpy reference -------------------------------------------------------------------------
def np_grad(w: np.ndarray, x: np.ndarray, y: np.ndarray, mu: float) -> np.ndarray:
    """∇[mean softmax CE + (μ/2)‖w‖²], w = [W (C×d) row-major, b (C)]."""
    W, b = w[: DIM * CLASSES].reshape(CLASSES, DIM), w[DIM * CLASSES :]
    z = x @ W.T + b
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    err = p - np.eye(CLASSES)[y]
    return np.concatenate([(err.T @ x / len(y)).ravel(), err.mean(0)]) + mu * w


def np_objective(w: np.ndarray, x: np.ndarray, y: np.ndarray, mu: float) -> float:
    W, b = w[: DIM * CLASSES].reshape(CLASSES, DIM), w[DIM * CLASSES :]
    z = x @ W.T + b
    m = z.max(1, keepdims=True)
    logsumexp = (m + np.log(np.exp(z - m).sum(1, keepdims=True))).ravel()
    return float((logsumexp - z[np.arange(len(y)), y]).mean() + 0.5 * mu * w @ w)


def paper_coefficients(variant: str, eta: float, mu: float, k: int, beta_rule="paper") -> tuple[float, float, float]:
    """Eq. (3.1), Eq. (3.2) and vanilla FedAc (Section 5), written out; FedAc-II's β of the
    authors' released code with `beta_rule="authors_code"`."""
    if variant == "vanilla":
        gamma = math.sqrt(eta / mu)
        return gamma, 1 / (gamma * mu), 1 / (gamma * mu) + 1
    gamma = max(math.sqrt(eta / (mu * k)), eta)
    if variant == "I":
        return gamma, 1 / (gamma * mu), 1 / (gamma * mu) + 1
    alpha = 3 / (2 * gamma * mu) - 1 / 2
    if beta_rule == "authors_code":
        return gamma, alpha, 2 * alpha**2 / (alpha - 1)
    return gamma, alpha, (2 * alpha**2 - 1) / (alpha - 1)


def fedac_round(w0, ag0, data, coef, eta, mu, steps):
    """Algorithm 1 for one round, full-batch gradients: (mean of w, mean of w_ag) over the workers."""
    gamma, alpha, beta = coef
    ws, ags = [], []
    for x, y in data:
        w, ag = w0.copy(), ag0.copy()
        for _ in range(steps):
            md = w / beta + (1 - 1 / beta) * ag
            g = np_grad(md, x, y, mu)
            ag = md - eta * g
            w = (1 - 1 / alpha) * w + md / alpha - gamma * g
        ws.append(w), ags.append(ag)
    return np.mean(ws, 0), np.mean(ags, 0)  # Algorithm 1 averages uniformly over workers


def fedac_sim(preset: str, sizes=(5, 4, 6), steps: int = K, beta_rule: str = "paper", **kw):
    method = {"preset": preset, "client": {"fedac": {"mu": MU, "beta_rule": beta_rule}}}
    return make_sim(method, sizes=sizes, steps=steps, local={"weight_decay": MU}, **kw)


def client_data(sim) -> list[tuple[np.ndarray, np.ndarray]]:
    return [
        tuple(t.double().numpy() if t.is_floating_point() else t.numpy() for t in client_xy(sim, c))
        for c in range(sim.setup.data.num_clients)
    ]


# ---- coefficients ------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["I", "II", "vanilla"])
@pytest.mark.parametrize("eta,mu,k", [(0.1, 0.01, 4), (0.5, 0.01, 1000), (0.02, 1e-3, 16)])
def test_coefficients_follow_the_papers_equations(variant, eta, mu, k):
    got = coefficients(variant, eta, mu, k)
    assert np.allclose((got.gamma, got.alpha, got.beta), paper_coefficients(variant, eta, mu, k), rtol=1e-12)


def test_coefficients_worked_example():
    # η = 0.1, μ = 0.01, K = 4: γ = √(0.1/0.04) = √2.5 for I and II; √10 for vanilla
    one, two, vanilla = (coefficients(v, 0.1, 0.01, 4) for v in ("I", "II", "vanilla"))
    assert one.gamma == pytest.approx(1.5811388300841898) and two.gamma == pytest.approx(1.5811388300841898)
    assert one.alpha == pytest.approx(63.245553203367585) and one.beta == pytest.approx(64.245553203367585)
    assert two.alpha == pytest.approx(94.36833) and two.beta == pytest.approx((2 * 94.36833**2 - 1) / 93.36833)
    assert vanilla.gamma == pytest.approx(math.sqrt(10)) and vanilla.alpha == pytest.approx(31.622776601683793)
    # the max branch: η > √(η/(μK)) gives γ = η
    assert coefficients("I", 0.5, 0.01, 1000).gamma == 0.5


def test_fedac_ii_beta_of_the_paper_and_of_the_authors_code_worked_example():
    # η = 25, μ = 0.01, K = 4: γ = max(√(25/0.04), 25) = 25, α = 3/(2·25·0.01) − 1/2 = 5.5;
    # β = (2·5.5² − 1)/4.5 = 119/9 (the paper's Eq. (3.2)), 2·5.5²/4.5 = 121/9 (the authors' code)
    paper, code = (coefficients("II", 25, 0.01, 4, rule) for rule in ("paper", "authors_code"))
    assert (paper.gamma, paper.alpha) == (code.gamma, code.alpha) == (25, 5.5)
    assert paper.beta == pytest.approx(119 / 9, rel=1e-14) and code.beta == pytest.approx(121 / 9, rel=1e-14)


def test_the_beta_rule_is_for_fedac_ii_only():
    with pytest.raises(MethodProblems, match="variant II only"):
        fedac_sim("fedac1", beta_rule="authors_code")


# ---- the recursion -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "preset,variant,beta_rule", [("fedac1", "I", "paper"), ("fedac2", "II", "paper"), ("fedac2", "II", "authors_code")]
)
def test_two_rounds_match_algorithm_1(preset, variant, beta_rule):
    theta0 = random_init(P)
    sim = fedac_sim(preset, init=theta0, beta_rule=beta_rule)
    data = client_data(sim)
    coef = paper_coefficients(variant, LR, MU, K, beta_rule)
    w, ag = theta0.double().numpy(), theta0.double().numpy()
    for t in range(2):  # round 2 starts from (θ, θ_ag) with θ ≠ θ_ag: both broadcasts are used
        sim.run_round(t)
        w, ag = fedac_round(w, ag, data, coef, LR, MU, K)
        assert np.allclose(sim.progress.theta.numpy(), w, atol=1e-5)
        assert np.allclose(sim.progress.server_state["ag"].numpy(), ag, atol=1e-5)
    assert not np.allclose(w, ag, atol=1e-3)


def test_one_step_rounds_are_minibatch_accelerated_sgd():
    """K = 1: averaging after one step from a common (w, w_ag) is one accelerated step with the
    workers' mean gradient (both updates are linear in g), and FedAc-I's γ = max(√(η/μ), η) is
    vanilla's √(η/μ) (η ≤ 1/μ). With equal client sizes and full batches, that is accelerated
    gradient descent on the union: MB-AC-SGD."""
    theta0 = random_init(P)
    sizes = (4, 4, 4)
    x, y = (np.concatenate(v) for v in zip(*client_data(fedac_sim("fedac1", sizes=sizes, steps=1))))
    gamma = math.sqrt(LR / MU)
    alpha, beta = 1 / (gamma * MU), 1 / (gamma * MU) + 1
    w, ag = theta0.double().numpy(), theta0.double().numpy()
    for t in range(3):
        md = w / beta + (1 - 1 / beta) * ag
        g = np_grad(md, x, y, MU)
        w, ag = (1 - 1 / alpha) * w + md / alpha - gamma * g, md - LR * g
    for preset in ("fedac1", "mbacsgd", "fedac_vanilla"):
        sim = fedac_sim(preset, sizes=sizes, steps=1, init=theta0)
        for t in range(3):
            sim.run_round(t)
        assert np.allclose(sim.progress.theta.numpy(), w, atol=1e-5), preset
        assert np.allclose(sim.progress.server_state["ag"].numpy(), ag, atol=1e-5), preset


def test_uplink_and_downlink_carry_two_messages():
    sim = fedac_sim("fedac1", init=random_init(P))
    sim.run_round(0)
    per_message = P * 4  # float32, identity codec
    assert sim.progress.bytes_down == 3 * 2 * per_message
    assert sim.progress.bytes_up == 3 * 2 * per_message


# ---- evaluation point --------------------------------------------------------------------------
def test_evaluation_reports_the_averaged_w_ag():
    sim = fedac_sim("fedac1", init=random_init(P))
    sim.job = sim.job.model_copy(update={"suboptimality": True})
    (rec,) = sim.run(stop_after=1)
    ag, theta = sim.progress.server_state["ag"].double().numpy(), sim.progress.theta.double().numpy()
    x, y = (t.numpy() for t in (sim.setup.data.src.test_x.double(), sim.setup.data.src.test_y))
    assert rec["test_loss"] == pytest.approx(np_objective(ag, x, y, 0.0), rel=1e-5)
    assert rec["test_loss"] != pytest.approx(np_objective(theta, x, y, 0.0), rel=1e-5)
    # subopt = F(w̄_ag) − F*, F over all clients' training data with the weight-decay term
    xs, ys = (np.concatenate(v) for v in zip(*client_data(sim)))
    f_star = sim.objective.optimum[1]
    assert rec["subopt"] == pytest.approx(np_objective(ag, xs, ys, MU) - f_star, rel=1e-6, abs=1e-9)
    assert rec["subopt"] > 0


def test_other_rules_evaluate_theta():
    sim = make_sim("fedavg", init=random_init(P))
    sim.run_round(0)
    assert torch.equal(sim.eval_params(), sim.progress.theta)


# ---- F* ----------------------------------------------------------------------------------------
def test_newton_optimum_is_stationary_and_below_every_point():
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(40, DIM, generator=g), torch.randint(0, CLASSES, (40,), generator=g)
    mu = 0.01
    objective = RegularisedLogistic.of(x, y, CLASSES, mu)
    w_star, f_star = objective.optimum
    xn, yn = x.double().numpy(), y.numpy()
    assert np.linalg.norm(np_grad(w_star.numpy(), xn, yn, mu)) < 1e-9
    assert f_star == pytest.approx(np_objective(w_star.numpy(), xn, yn, mu), abs=1e-12)
    for seed in range(5):
        w = random_init(P, seed=seed, scale=1.0).double()
        gap = objective.suboptimality(w)
        assert gap == pytest.approx(np_objective(w.numpy(), xn, yn, mu) - f_star, abs=1e-12)
        # μ-strong convexity: F(w) − F* ≥ (μ/2)‖w − w*‖² (so in particular ≥ 0)
        assert gap >= 0.5 * mu * float(((w - w_star) ** 2).sum()) - 1e-12


def test_suboptimality_needs_the_logistic_model_and_weight_decay():
    with pytest.raises(UserError, match="weight_decay"):
        RegularisedLogistic.of(torch.zeros(3, 2), torch.zeros(3, dtype=torch.long), 2, 0.0)
    sim = make_sim("fedavg", model=TwoStageMLP())
    sim.job = sim.job.model_copy(update={"suboptimality": True})
    with pytest.raises(UserError, match="`logistic` or `binary_logistic` model"):
        sim.run(stop_after=1)


def test_suboptimality_off_keeps_job_ids():
    off, on = job_config(), job_config(suboptimality=True)
    assert "suboptimality" not in off.model_dump()
    assert job_id(off) != job_id(on)


# ---- guards ------------------------------------------------------------------------------------
def test_vectorised_execution_refuses_fedac():
    sim = fedac_sim("fedac1", execution="vectorised")
    with pytest.raises(NotVectorisable, match="'fedac'"):
        sim.run_round(0)


def test_a_term_moving_the_gradient_point_cannot_claim_vmappable():
    with pytest.raises(TypeError, match="vmappable"):
        type("Bad", (ClientTerm,), {"name": "bad", "vmappable": True, "grad_point": lambda self, ctx, w: w})


def test_fedac_term_needs_the_fedac_server_rule():
    with pytest.raises(MethodProblems, match="server rule 'fedac'"):
        make_sim({"label": "odd", "server": {"rule": "average"}, "client": [{"term": "fedac"}]})
