"""Client terms that act on the logits: FedLC (label calibration) and FedNTD (not-true distillation)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from benchmark.fl.base import ClientContext, ClientTerm, StrictParams
from benchmark.fl.losses import kl_softmax
from benchmark.fl.presets import register_preset
from benchmark.fl.registry import CLIENT_TERMS
from benchmark.lazy import torch


class LcParams(StrictParams):
    tau: float = Field(1.0, ge=0, description="calibration strength τ")


@CLIENT_TERMS.register
class LabelCalibration(ClientTerm):
    """FedLC: CE on z_c − τ n_{i,c}^{−1/4}; classes absent from the client are masked out."""

    name = "lc"
    Params = LcParams
    vmappable = True
    scratch_inputs = ("lc.shift",)  # per-client calibration, from its class counts

    def begin(self, ctx: ClientContext) -> None:
        counts = ctx.class_counts.float()
        shift = torch.where(counts > 0, self.p.tau * counts.clamp(min=1).pow(-0.25), float("inf"))
        ctx.scratch["lc.shift"] = shift

    def adjust_logits(self, ctx: ClientContext, logits):
        return logits - ctx.scratch["lc.shift"].to(logits.device)


def not_true_logits(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(B, C−1): each row without its true class's column.

    A gather of columns j + [j ≥ y] rather than a boolean mask: same values, and no data-dependent
    shape, so it runs under vmap.
    """
    others = torch.arange(logits.shape[1] - 1, device=logits.device).expand(len(y), -1)
    return logits.gather(1, others + (others >= y.unsqueeze(1)).long())


class NtdParams(StrictParams):
    beta: float = Field(0.3, ge=0, le=1, description="weight of the not-true distillation")
    temperature: float = Field(1.0, gt=0)
    ce_weight: Literal["one_minus_beta", "one"] = Field(
        "one_minus_beta", description="(1−β)·CE (docs/algorithms.md), or 1·CE (CE + β·KL)"
    )


@CLIENT_TERMS.register
class NotTrueDistillation(ClientTerm):
    """FedNTD: w_ce·CE + β·KL(q̃_g ‖ q̃_l), q̃ = softmax over the not-true classes at temperature T,
    q̃_g from the received model (no gradient)."""

    name = "ntd"
    Params = NtdParams
    vmappable = True  # reads only w and the received model's logits

    def ce_weight(self, ctx: ClientContext) -> float:
        return 1 - self.p.beta if self.p.ce_weight == "one_minus_beta" else 1.0

    def loss(self, ctx: ClientContext, w, out, x, y):
        with torch.no_grad():
            global_logits = ctx.forward(ctx.start, x)
        return self.p.beta * kl_softmax(
            not_true_logits(global_logits, y), not_true_logits(out.logits, y), self.p.temperature
        )


register_preset("fedlc", "FedLC", {"rule": "average"}, [{"term": "lc", "tau": 1.0}])
register_preset("fedntd", "FedNTD", {"rule": "average"}, [{"term": "ntd", "beta": 0.3, "temperature": 1.0}])
