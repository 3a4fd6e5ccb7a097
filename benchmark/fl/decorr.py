"""FedDecorr (Shi et al.): penalise correlation between the dimensions of the batch's features."""

from __future__ import annotations

from pydantic import Field

from benchmark.fl.base import ClientContext, ClientTerm, StrictParams
from benchmark.fl.presets import register_preset
from benchmark.fl.registry import CLIENT_TERMS
from benchmark.lazy import torch


class DecorrParams(StrictParams):
    beta: float = Field(0.01, ge=0)
    eps: float = Field(1e-8, gt=0, description="added to the variance before standardising")


def offdiag_corr_penalty(z: torch.Tensor, eps: float) -> torch.Tensor:
    """‖offdiag(Corr(z))‖²_F / d² with z standardised over the batch (population variance)."""
    z = z - z.mean(0, keepdim=True)
    z = z / (z.pow(2).mean(0, keepdim=True) + eps).sqrt()
    corr = z.T @ z / len(z)
    d = corr.shape[0]
    off = corr - torch.diag(torch.diagonal(corr))
    return off.pow(2).sum() / d**2


@CLIENT_TERMS.register
class Decorrelation(ClientTerm):
    name = "decorr"
    Params = DecorrParams
    needs_features = True
    vmappable = True  # a pure function of the batch's features

    def loss(self, ctx: ClientContext, w, out, x, y):
        if len(out.features) < 2:
            return None  # correlation of a single example is undefined
        return self.p.beta * offdiag_corr_penalty(out.features.flatten(1), self.p.eps)


register_preset("feddecorr", "FedDecorr", {"rule": "average"}, [{"term": "decorr", "beta": 0.01}])
