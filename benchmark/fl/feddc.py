"""FedDC (Gao et al.): local drift variables h_i decouple each client's model from the global one,
plus a SCAFFOLD-like gradient correction G.

With ω̃_i = n_i N / Σn and α_i = α/ω̃_i, the client minimises
    CE + (α_i/2)‖w − (θ − h_i)‖² + ⟨w, G/ω̃_i − G_i⟩
and afterwards, with Δ = w − θ: h_i ← h_i + Δ, G_i⁺ = G_i − G/ω̃_i − Δ/(K η_0).
Uplink: Δ and ω̃_i (G_i⁺ − G_i) (2 messages). The client rule reads G, so G is broadcast with θ
(2 messages down: a count of 1 would leave out the G it reads; docs/algorithms.md, "Departures from the papers").
Server: G ← G + (1/N) Σ_S ω̃_i (G_i⁺ − G_i) ; θ ← mean_S(w_i) + mean_{all N}(h_i), where the
mean of all h_i is tracked from the uploaded Δ (h_i moves by exactly Δ_i; h_i starts at 0).
"""

from __future__ import annotations

from pydantic import Field

from benchmark.fl.base import ClientContext, ClientTerm, RoundInfo, ServerRule, StrictParams, Uploads
from benchmark.fl.losses import sq_dist, state_or_zeros
from benchmark.fl.presets import register_preset
from benchmark.fl.registry import CLIENT_TERMS, SERVER_RULES
from benchmark.lazy import torch

GLOBAL_GRAD = "drift_grad"  # broadcast name of G
GRAD_DELTA = "drift_grad_delta"  # uplink name of ω̃_i (G_i⁺ − G_i)


@SERVER_RULES.register
class FedDCServer(ServerRule):
    name = "feddc"
    broadcasts, consumes, requires_terms = (GLOBAL_GRAD,), (GRAD_DELTA,), ("feddc",)

    def init_state(self, theta):
        return {"G": torch.zeros_like(theta), "h_mean": torch.zeros_like(theta)}

    def broadcast(self, theta, state, rnd):
        return {"model": theta, GLOBAL_GRAD: state["G"]}

    def update(self, theta, state, sent, up: Uploads, rnd: RoundInfo):
        deltas = up.messages["delta"]
        h_mean = state["h_mean"] + deltas.sum(0) / rnd.num_clients
        G = state["G"] + up.messages[GRAD_DELTA].sum(0) / rnd.num_clients
        return theta + deltas.mean(0) + h_mean, {"G": G, "h_mean": h_mean}


class FedDCParams(StrictParams):
    alpha: float = Field(1e-2, gt=0, description="α: strength of the drift-decoupled penalty")


@CLIENT_TERMS.register
class FedDCTerm(ClientTerm):
    name = "feddc"
    Params = FedDCParams
    reads, produces = (GLOBAL_GRAD,), (GRAD_DELTA,)
    H, G = "feddc.h", "feddc.G"
    PULL, ANCHOR, LINEAR = "feddc.pull", "feddc.anchor", "feddc.linear"
    vmappable = True
    scratch_inputs = (PULL, ANCHOR, LINEAR)  # per client: α_i/2, θ − h_i, G/ω̃_i − G_i

    @staticmethod
    def relative_weight(ctx: ClientContext) -> float:
        """ω̃_i = n_i N / Σ n (1 for equal client sizes)."""
        return ctx.num_samples * ctx.rnd.num_clients / ctx.total_samples

    def begin(self, ctx: ClientContext) -> None:
        wt = self.relative_weight(ctx)
        h = state_or_zeros(ctx.state, self.H, ctx.start)
        g_i = state_or_zeros(ctx.state, self.G, ctx.start)
        # a 0-dim tensor (not a float) so it can be stacked across clients; same float32 product
        ctx.scratch[self.PULL] = torch.tensor(0.5 * (self.p.alpha / wt), dtype=ctx.start.dtype, device=ctx.start.device)
        ctx.scratch[self.ANCHOR] = ctx.start - h
        ctx.scratch[self.LINEAR] = ctx.received[GLOBAL_GRAD] / wt - g_i

    def loss(self, ctx: ClientContext, w, out, x, y):
        s = ctx.scratch
        return s[self.PULL] * sq_dist(w, s[self.ANCHOR]) + (w * s[self.LINEAR]).sum()

    def finish(self, ctx: ClientContext, w):
        wt = self.relative_weight(ctx)
        delta = w - ctx.start
        g_i = state_or_zeros(ctx.state, self.G, w)
        g_new = g_i - ctx.received[GLOBAL_GRAD] / wt - delta / (ctx.steps * ctx.rnd.base_lr)
        ctx.state[self.H] = state_or_zeros(ctx.state, self.H, w) + delta
        ctx.state[self.G] = g_new
        ctx.messages[GRAD_DELTA] = wt * (g_new - g_i)


register_preset("feddc", "FedDC", {"rule": "feddc"}, [{"term": "feddc", "alpha": 1e-2}])
