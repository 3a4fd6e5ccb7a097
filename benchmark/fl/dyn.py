"""FedDyn (Acar et al.): a dynamic linear + quadratic regulariser per client, and a server
correction h that tracks the clients' drift.

Client: CE − ⟨h_i, w⟩ + (α/2)‖w − θ‖²; afterwards h_i ← h_i − α(w − θ).
Server: h ← h − (α/N) Σ_S (w_i − θ) ; θ ← mean_S(w_i) − h/α  (plain mean over participants).
α is one hyper-parameter of both parts (`shared_params`): set it in either place.
"""

from __future__ import annotations

from pydantic import Field

from benchmark.fl.base import ClientContext, ClientTerm, RoundInfo, ServerRule, StrictParams, Uploads
from benchmark.fl.losses import sq_dist, state_or_zeros
from benchmark.fl.presets import register_preset
from benchmark.fl.registry import CLIENT_TERMS, SERVER_RULES
from benchmark.lazy import torch


class DynParams(StrictParams):
    alpha: float = Field(1e-2, gt=0, description="α (paper grid 1e-3, 1e-2, 1e-1)")


@SERVER_RULES.register
class DynServer(ServerRule):
    name = "dyn"
    Params = DynParams
    requires_terms, shared_params = ("dyn",), ("alpha",)

    def init_state(self, theta):
        return {"h": torch.zeros_like(theta)}

    def update(self, theta, state, sent, up: Uploads, rnd: RoundInfo):
        deltas = up.messages["delta"]  # w_i − θ (every client started from θ)
        h = state["h"] - (self.p.alpha / rnd.num_clients) * deltas.sum(0)
        return theta + deltas.mean(0) - h / self.p.alpha, {"h": h}


@CLIENT_TERMS.register
class DynTerm(ClientTerm):
    name = "dyn"
    Params = DynParams
    KEY = "dyn.h"
    requires_rules = ("dyn",)  # its h_i only cancels against the server's h
    vmappable = True
    scratch_inputs = (KEY,)  # h_i, read by the loss

    def begin(self, ctx: ClientContext) -> None:
        ctx.scratch[self.KEY] = state_or_zeros(ctx.state, self.KEY, ctx.start)

    def loss(self, ctx: ClientContext, w, out, x, y):
        h = ctx.scratch[self.KEY]
        return -(h * w).sum() + 0.5 * self.p.alpha * sq_dist(w, ctx.start)

    def finish(self, ctx: ClientContext, w):
        h = state_or_zeros(ctx.state, self.KEY, w)
        ctx.state[self.KEY] = h - self.p.alpha * (w - ctx.start)


register_preset("feddyn", "FedDyn", {"rule": "dyn", "alpha": 1e-2}, [{"term": "dyn", "alpha": 1e-2}])
