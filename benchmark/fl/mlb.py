"""FedMLB (Kim et al.): multi-level hybrid branches through the received, frozen global blocks.

hybrid_l = local stages 0..l, then the received model's stages l+1.. and head (no gradient to
those global blocks: they are evaluated at the received vector, which is not being trained).
Loss: CE(main) + (λ1/L) Σ_l CE(hybrid_l) + (λ2/L) Σ_l KL(softmax(hybrid_l/T) ‖ softmax(main/T)).
Needs a model with the stage protocol (models/registry.py: `stages=True`, `start=k`).
"""

from __future__ import annotations

from pydantic import Field

from benchmark.fl.base import ClientContext, ClientTerm, StrictParams
from benchmark.fl.losses import kl_softmax
from benchmark.fl.presets import register_preset
from benchmark.fl.registry import CLIENT_TERMS
from benchmark.lazy import F


class MlbParams(StrictParams):
    lambda_ce: float = Field(1.0, ge=0, description="λ1: weight of the hybrid paths' cross-entropy")
    lambda_kl: float = Field(1.0, ge=0, description="λ2: weight of the hybrid-to-main distillation")
    temperature: float = Field(1.0, gt=0, description="T of the distillation softmaxes")
    detach_hybrid_target: bool = Field(
        False, description="False: gradient flows through the hybrid KL target (official code); True: stop-gradient"
    )


@CLIENT_TERMS.register
class Mlb(ClientTerm):
    name = "mlb"
    Params = MlbParams
    model_traits = ("stages",)
    vmappable = True  # reads only w and the received model

    def loss(self, ctx: ClientContext, w, out, x, y):
        # a second local forward for the stage outputs: the engine's forward returns logits only
        _, stages = ctx.forward(w, x, stages=True)
        frozen = ctx.start.detach()
        ce_sum, kl_sum = 0.0, 0.0
        for level, h in enumerate(stages):
            hybrid = ctx.forward(frozen, h, start=level + 1)
            ce_sum = ce_sum + F.cross_entropy(hybrid, y)
            target = hybrid.detach() if self.p.detach_hybrid_target else hybrid
            kl_sum = kl_sum + kl_softmax(target, out.logits, self.p.temperature)
        n = len(stages)
        return self.p.lambda_ce / n * ce_sum + self.p.lambda_kl / n * kl_sum


register_preset("fedmlb", "FedMLB", {"rule": "average"}, [{"term": "mlb"}])
