"""Server rules: plain averaging, server momentum (FedAvgM), accelerated client gradient (FedACG)."""

from __future__ import annotations

from pydantic import Field

from benchmark.fl.base import RoundInfo, ServerRule, StrictParams, Uploads
from benchmark.fl.presets import register_modifier, register_preset
from benchmark.fl.registry import SERVER_RULES
from benchmark.lazy import torch


class GlobalLr(StrictParams):
    global_lr: float = Field(1.0, gt=0, description="η_g: θ ← θ + η_g · (aggregate)")


@SERVER_RULES.register
class Average(ServerRule):
    """θ ← θ + η_g Δ̄ (η_g = 1: the weighted average of the client models)."""

    name = "average"
    Params = GlobalLr

    def update(self, theta, state, sent, up: Uploads, rnd: RoundInfo):
        return theta + self.p.global_lr * up.mean(), state


class MomentumParams(GlobalLr):
    beta: float = Field(0.4, ge=0, lt=1, description="server momentum β")


@SERVER_RULES.register
class Momentum(ServerRule):
    """FedAvgM: m ← β m + Δ̄ ; θ ← θ + η_g m."""

    name = "momentum"
    Params = MomentumParams

    def init_state(self, theta):
        return {"m": torch.zeros_like(theta)}

    def update(self, theta, state, sent, up: Uploads, rnd: RoundInfo):
        m = self.p.beta * state["m"] + up.mean()
        return theta + self.p.global_lr * m, {"m": m}


class AcgParams(StrictParams):
    lam: float = Field(0.85, ge=0, lt=1, description="λ: momentum decay and lookahead distance")


@SERVER_RULES.register
class AcceleratedClientGradient(ServerRule):
    """FedACG: broadcast the lookahead x = θ + λm; m ← λm + Δ̄ (Δ̄ measured from x); θ ← x + Δ̄."""

    name = "acg"
    Params = AcgParams

    def init_state(self, theta):
        return {"m": torch.zeros_like(theta)}

    def broadcast(self, theta, state, rnd):
        return {"model": theta + self.p.lam * state["m"]}

    def update(self, theta, state, sent, up: Uploads, rnd: RoundInfo):
        delta = up.mean()
        return sent["model"] + delta, {"m": self.p.lam * state["m"] + delta}


ACG_PROX = {"term": "prox", "mu": 1e-2}  # FedACG's regulariser toward the lookahead (paper's best β)
register_preset("fedavg", "FedAvg", {"rule": "average"})
register_preset("fedavgm", "FedAvgM", {"rule": "momentum", "beta": 0.4})
register_preset("fedacg", "FedACG", {"rule": "acg", "lam": 0.85}, [dict(ACG_PROX)])
register_modifier("acg", "ACG", server={"rule": "acg", "lam": 0.85}, client=[dict(ACG_PROX)])
