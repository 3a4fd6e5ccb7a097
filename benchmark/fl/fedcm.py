"""FedCM (Xu et al.): client-level momentum. The server broadcasts θ and the global direction D
(2 messages down); each local step mixes the fresh gradient with D.

Client: w ← w − η(α g + (1−α) D_t)  (g includes weight decay).
Server: D_{t+1} = −Σ ω_i Δ_i/(η K_i) ; θ ← θ + η_g Δ̄  (= θ − η_g η K D_{t+1} when all K_i = K).
D_0 = 0.
"""

from __future__ import annotations

from pydantic import Field

from benchmark.fl.base import ClientContext, ClientTerm, RoundInfo, ServerRule, StrictParams, Uploads
from benchmark.fl.presets import register_preset
from benchmark.fl.registry import CLIENT_TERMS, SERVER_RULES
from benchmark.fl.servers import GlobalLr
from benchmark.lazy import torch

DIRECTION = "direction"


@SERVER_RULES.register
class FedCMServer(ServerRule):
    name = "fedcm"
    Params = GlobalLr
    broadcasts, requires_terms = (DIRECTION,), ("fedcm",)  # D only means something to the FedCM step

    def init_state(self, theta):
        return {"D": torch.zeros_like(theta)}

    def broadcast(self, theta, state, rnd):
        return {"model": theta, DIRECTION: state["D"]}

    def update(self, theta, state, sent, up: Uploads, rnd: RoundInfo):
        per_step = up.messages["delta"] / up.lr_sums.unsqueeze(1)  # Δ_i/(η K), or Σ_k η_k with intra-round decay
        return theta + self.p.global_lr * up.mean(), {"D": -(up.weights @ per_step)}


class FedCMParams(StrictParams):
    alpha: float = Field(0.1, gt=0, le=1, description="weight of the fresh gradient (paper grid .05/.1/.3/.5)")


@CLIENT_TERMS.register
class FedCMTerm(ClientTerm):
    name = "fedcm"
    Params = FedCMParams
    reads = (DIRECTION,)
    vmappable = True  # no loss: direction runs per client, outside vmap

    def direction(self, ctx: ClientContext, w, g):
        return self.p.alpha * g + (1 - self.p.alpha) * ctx.received[DIRECTION]


register_preset("fedcm", "FedCM", {"rule": "fedcm"}, [{"term": "fedcm", "alpha": 0.1}])
