"""MOON (Li et al.): model-contrastive loss on penultimate features.

ℓ_con = −log(e^{s(z,z_g)/τ} / (e^{s(z,z_g)/τ} + e^{s(z,z_prev)/τ})), s = cosine similarity;
z from the local model, z_g from the received model, z_prev from this client's previous local
model (the received model for a client that has none yet). Loss: CE + μ·ℓ_con.
"""

from __future__ import annotations

from pydantic import Field

from benchmark.fl.base import ClientContext, ClientTerm, StrictParams
from benchmark.fl.presets import register_preset
from benchmark.fl.registry import CLIENT_TERMS
from benchmark.lazy import F, torch


class MoonParams(StrictParams):
    mu: float = Field(1.0, ge=0, description="weight of the contrastive loss")
    tau: float = Field(0.5, gt=0, description="temperature")


@CLIENT_TERMS.register
class Moon(ClientTerm):
    name = "moon"
    Params = MoonParams
    needs_features = True
    KEY = "moon.prev"
    vmappable = True
    scratch_inputs = (KEY,)  # the previous local model, read by the loss

    def begin(self, ctx: ClientContext) -> None:
        ctx.scratch[self.KEY] = ctx.state.get(self.KEY, ctx.start)

    def loss(self, ctx: ClientContext, w, out, x, y):
        previous = ctx.scratch[self.KEY]
        with torch.no_grad():
            z_g = ctx.forward(ctx.start, x, features=True)[1]
            z_p = ctx.forward(previous, x, features=True)[1]
        z = out.features
        sims = torch.stack([F.cosine_similarity(z, z_g, dim=1), F.cosine_similarity(z, z_p, dim=1)], 1) / self.p.tau
        target = torch.zeros(len(z), dtype=torch.long, device=z.device)  # the positive pair is column 0
        return self.p.mu * F.cross_entropy(sims, target)

    def finish(self, ctx: ClientContext, w):
        ctx.state[self.KEY] = w.detach().clone()


register_preset("moon", "MOON", {"rule": "average"}, [{"term": "moon", "mu": 1.0, "tau": 0.5}])
