"""FedAGM (Kim et al.): lookahead broadcast x = θ + λm with m = θ_t − θ_{t−1}, client loss
α·CE + (β/2)‖w − x‖² (the `ce_scale` and `prox` terms), server θ ← τ·mean(w_i) + (1−τ)·x with the
plain mean over participants (FedAGM's Algorithm 2: τ/|S_t|·Σ), like FedDyn's and FedDC's mean_S."""

from __future__ import annotations

from pydantic import Field

from benchmark.fl.base import ClientContext, ClientTerm, RoundInfo, ServerRule, StrictParams, Uploads
from benchmark.fl.presets import register_preset
from benchmark.fl.registry import CLIENT_TERMS, SERVER_RULES
from benchmark.lazy import torch


class AgmParams(StrictParams):
    lam: float = Field(0.85, ge=0, lt=1, description="λ: lookahead distance along the last global move")
    tau: float = Field(1.0, gt=0, le=1, description="τ: weight of the clients' average vs the lookahead")


@SERVER_RULES.register
class AgmServer(ServerRule):
    name = "agm"
    Params = AgmParams

    def init_state(self, theta):
        return {"m": torch.zeros_like(theta)}

    def broadcast(self, theta, state, rnd):
        return {"model": theta + self.p.lam * state["m"]}

    def update(self, theta, state, sent, up: Uploads, rnd: RoundInfo):
        x = sent["model"]
        new = self.p.tau * (x + up.messages["delta"].mean(0)) + (1 - self.p.tau) * x
        return new, {"m": new - theta}


class CeScaleParams(StrictParams):
    alpha: float = Field(1.0, gt=0, description="multiplier on the cross-entropy")


@CLIENT_TERMS.register
class CeScale(ClientTerm):
    name = "ce_scale"
    Params = CeScaleParams
    vmappable = True  # no loss: only the per-client ce_weight, which runs outside vmap

    def ce_weight(self, ctx: ClientContext) -> float:
        return self.p.alpha


register_preset(
    "fedagm",
    "FedAGM",
    {"rule": "agm", "lam": 0.85, "tau": 1.0},
    [{"term": "ce_scale", "alpha": 1.0}, {"term": "prox", "mu": 1e-3}],
)
