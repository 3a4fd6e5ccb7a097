"""Client terms of the foundation methods: the proximal regulariser (FedProx, FedACG)."""

from __future__ import annotations

from pydantic import Field

from benchmark.fl.base import ClientContext, ClientTerm, StrictParams
from benchmark.fl.losses import sq_dist
from benchmark.fl.presets import register_preset
from benchmark.fl.registry import CLIENT_TERMS


class ProxParams(StrictParams):
    mu: float = Field(1e-3, ge=0, description="strength of the pull toward the received model")
    halved: bool = Field(
        True,
        description="True: (μ/2)‖w − x‖² as in the papers; False: μ‖w − x‖² as in the official code",
    )


@CLIENT_TERMS.register
class Prox(ClientTerm):
    """(μ/2)‖w − x_i‖², x_i = the received start point (FedProx: θ; FedACG: the lookahead)."""

    name = "prox"
    Params = ProxParams
    vmappable = True  # a pure function of (w, ctx.start)

    def loss(self, ctx: ClientContext, w, out, x, y):
        if self.p.mu == 0:
            return None
        scale = 0.5 if self.p.halved else 1.0
        return scale * self.p.mu * sq_dist(w, ctx.start)


register_preset("fedprox", "FedProx", {"rule": "average"}, [{"term": "prox", "mu": 1e-3}])
