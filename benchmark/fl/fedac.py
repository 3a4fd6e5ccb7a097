"""FedAc (Yuan & Ma, Algorithm 1): federated accelerated SGD with two sequences (w, w_ag).

Per local step, with η the step's learning rate and K = local steps per round:
    w_md = w/β + (1 − 1/β) w_ag ;  g = ∇F(w_md; ξ)  (CE gradient + weight_decay · w_md)
    w_ag ← w_md − η g ;  w ← (1 − 1/α) w + w_md/α − γ g
After K steps the server averages both sequences over the participants (plain mean over
workers, as in Algorithm 1) and broadcasts both. Evaluation reports the averaged w_ag.
MB-AC-SGD is this recursion with vanilla coefficients (γ = √(η/μ)) and one step per round on
all K batches together (the `minibatch` term); MB-SGD is FedAvg with that term.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from benchmark.errors import UserError
from benchmark.fl.base import ClientContext, ClientTerm, RoundInfo, ServerRule, StrictParams, Uploads
from benchmark.fl.presets import register_preset
from benchmark.fl.registry import CLIENT_TERMS, SERVER_RULES
from benchmark.lazy import torch
from benchmark.params import Identity, declared

AG = "ag"  # the broadcast averaged w_ag, and (as AG_DELTA) its change uploaded by a client
AG_DELTA = "ag_delta"
SCRATCH = "fedac"  # ctx.scratch key: this round's coefficients and the running w_ag

Variant = Literal["I", "II", "vanilla"]
# FedAc-II's β: the paper's Eq. (3.2) (2α² − 1)/(α − 1), or 2α²/(α − 1) as the authors' released code sets it
BetaRule = Literal["paper", "authors_code"]


@dataclass(frozen=True)
class Coefficients:
    gamma: float
    alpha: float
    beta: float


def coefficients(variant: Variant, eta: float, mu: float, steps: int, beta_rule: BetaRule = "paper") -> Coefficients:
    """(γ, α, β) of Eq. (3.1) FedAc-I, Eq. (3.2) FedAc-II (β by `beta_rule`), or vanilla FedAc (Section 5)."""
    if variant == "vanilla":
        gamma = math.sqrt(eta / mu)
    else:  # the acceleration-stability trade-off of FedAc-I and FedAc-II
        gamma = max(math.sqrt(eta / (mu * steps)), eta)
    if variant == "II":
        alpha = 3 / (2 * gamma * mu) - 0.5
        if alpha <= 1:
            raise ValueError(f"FedAc-II needs α > 1 (γμ < 1); got γ={gamma:g}, μ={mu:g}: lower the lr")
        top = 2 * alpha**2 - 1 if beta_rule == "paper" else 2 * alpha**2
        return Coefficients(gamma, alpha, top / (alpha - 1))
    alpha = 1 / (gamma * mu)
    return Coefficients(gamma, alpha, alpha + 1)


class FedAcServerParams(StrictParams):
    pass


@SERVER_RULES.register
class FedAcServer(ServerRule):
    """State θ_ag (the averaged w_ag, starting at θ₀); broadcasts θ and θ_ag; both are averaged."""

    name = "fedac"
    Params = FedAcServerParams
    broadcasts, consumes, requires_terms = (AG,), (AG_DELTA,), ("fedac",)

    def init_state(self, theta):
        return {AG: theta.clone()}

    def broadcast(self, theta, state, rnd):
        return {"model": theta, AG: state[AG]}

    def update(self, theta, state, sent, up: Uploads, rnd: RoundInfo):
        # uploads are changes relative to what each client received, like "delta"
        theta = sent["model"] + up.messages["delta"].mean(0)
        return theta, {AG: sent[AG] + up.messages[AG_DELTA].mean(0)}

    def eval_params(self, theta, state):
        return state[AG]


class FedAcParams(StrictParams):
    variant: Variant = Field("I", description="I: Eq. (3.1); II: Eq. (3.2); vanilla: γ = √(η/μ)")
    mu: float | None = Field(
        None, gt=0, description="strong convexity μ in γ, α, β; default (null): local.weight_decay λ, as in the paper"
    )
    beta_rule: BetaRule = declared(
        "paper",
        identity=Identity.UNLESS_DEFAULT,  # added after FedAc-II jobs existed: their ids stand
        description="variant II's β: paper (2α² − 1)/(α − 1), Eq. (3.2); authors_code: 2α²/(α − 1), their released code",
    )

    @model_validator(mode="after")
    def _beta_rule_is_variant_ii(self):
        if self.beta_rule != "paper" and self.variant != "II":
            raise ValueError(f"beta_rule applies to variant II only (variant {self.variant}'s β is α + 1)")
        return self


@CLIENT_TERMS.register
class FedAcTerm(ClientTerm):
    """The FedAc step; w_ag lives in ctx.scratch during the round, its change goes up as `ag_delta`."""

    name = "fedac"
    Params = FedAcParams
    reads, produces = (AG,), (AG_DELTA,)

    def begin(self, ctx: ClientContext) -> None:
        if AG not in ctx.received:
            raise UserError("client term 'fedac' needs the server rule 'fedac' (it broadcasts the averaged w_ag)")
        mu = self.p.mu if self.p.mu is not None else ctx.rnd.weight_decay
        if mu <= 0:
            raise UserError("client term 'fedac' needs μ > 0: set local.weight_decay (λ = μ) or fedac.mu")
        coef = coefficients(self.p.variant, ctx.rnd.lr, mu, ctx.steps, self.p.beta_rule)
        ctx.scratch[SCRATCH] = {"coef": coef, AG: ctx.received[AG].detach().clone()}

    def grad_point(self, ctx: ClientContext, w: torch.Tensor) -> torch.Tensor:
        s = ctx.scratch[SCRATCH]
        beta = s["coef"].beta
        return w / beta + (1 - 1 / beta) * s[AG]

    def step(self, ctx: ClientContext, w, point, g, lr: float) -> torch.Tensor:
        s = ctx.scratch[SCRATCH]
        c: Coefficients = s["coef"]
        s[AG] = point - lr * g
        return (1 - 1 / c.alpha) * w + point / c.alpha - c.gamma * g

    def finish(self, ctx: ClientContext, w: torch.Tensor) -> None:
        ctx.messages[AG_DELTA] = ctx.scratch[SCRATCH][AG] - ctx.received[AG]


@CLIENT_TERMS.register
class MinibatchTerm(ClientTerm):
    """MB-SGD / MB-AC-SGD: the K batches of a round become one step on their union (K·B samples
    per worker, M·K·B over the workers), so T = K·R stays the runtime and the samples are the
    ones the local methods see."""

    name = "minibatch"

    def regroup(self, batches: list) -> list:
        if len(batches) <= 1:
            return batches
        x = torch.cat([b.x for b in batches])
        return [type(batches[0])(x, torch.cat([b.y for b in batches]), batches[0].epoch)]


# FedAc (convex, all workers): μ defaults to local.weight_decay λ. The minibatch baselines take
# one step per round on the round's K batches together (the `minibatch` term, docs/methods.md).
register_preset("fedac1", "FedAc-I", {"rule": "fedac"}, [{"term": "fedac", "variant": "I"}])
register_preset("fedac2", "FedAc-II", {"rule": "fedac"}, [{"term": "fedac", "variant": "II"}])
register_preset("fedac_vanilla", "FedAc (vanilla)", {"rule": "fedac"}, [{"term": "fedac", "variant": "vanilla"}])
register_preset("mbsgd", "MB-SGD", {"rule": "average"}, [{"term": "minibatch"}])
register_preset(
    "mbacsgd", "MB-AC-SGD", {"rule": "fedac"}, [{"term": "fedac", "variant": "vanilla"}, {"term": "minibatch"}]
)
