"""FedAdam (Reddi et al.): the aggregate update Δ̄ is fed to an Adam-like server optimiser."""

from __future__ import annotations

from pydantic import Field

from benchmark.fl.base import RoundInfo, ServerRule, StrictParams, Uploads
from benchmark.fl.presets import register_preset
from benchmark.fl.registry import SERVER_RULES
from benchmark.lazy import torch
from benchmark.params import Identity, declared


class AdamParams(StrictParams):
    global_lr: float = Field(0.01, gt=0, description="η_g")
    beta1: float = Field(0.9, ge=0, lt=1)
    beta2: float = Field(0.99, ge=0, lt=1)
    tau: float = Field(1e-3, gt=0, description="adaptivity τ; also v₀ = τ²")
    per_step: bool = declared(
        False,
        identity=Identity.UNLESS_DEFAULT,
        description="FedCM's convention: Adam runs on the per-step pseudo-gradient Δ̄/(ηK) and the step is "
        "multiplied by ηK (η_g = 1 then means 'move as far as the clients did'); ηK = Σ_k η_k of this round",
    )


@SERVER_RULES.register
class Adam(ServerRule):
    """m ← β1 m + (1−β1)Δ̄ ; v ← β2 v + (1−β2)Δ̄² ; θ ← θ + η_g m/(√v + τ) (no bias correction).

    per_step: d = Δ̄/(ηK), m, v over d, θ ← θ + η_g·ηK·m/(√v + τ) — FedCM's FedAdam (its appendix C:
    "η_g is multiplied by η_l K"), so its printed η_g = 0.1, τ = 0.01 are used as they stand.
    """

    name = "adam"
    Params = AdamParams

    def init_state(self, theta):
        return {"m": torch.zeros_like(theta), "v": torch.full_like(theta, self.p.tau**2)}

    def update(self, theta, state, sent, up: Uploads, rnd: RoundInfo):
        scale = (up.weights @ up.lr_sums) if self.p.per_step else 1.0  # ηK: the clients' step-size sum
        d = up.mean() / scale
        m = self.p.beta1 * state["m"] + (1 - self.p.beta1) * d
        v = self.p.beta2 * state["v"] + (1 - self.p.beta2) * d * d
        return theta + self.p.global_lr * scale * m / (v.sqrt() + self.p.tau), {"m": m, "v": v}


register_preset("fedadam", "FedAdam", {"rule": "adam"})
