"""SCAFFOLD (Karimireddy et al.), option II control variates.

Broadcast θ and c (2 messages); step w ← w − η(g − c_i + c); after K steps
c_i⁺ = c_i − c + (x_i − w_K)/(K η); upload Δ_i and c_i⁺ − c_i (2 messages).
Server: θ ← θ + η_g Δ̄ ; c ← c + (1/N) Σ_S (c_i⁺ − c_i).
"""

from __future__ import annotations

from benchmark.fl.base import ClientContext, ClientTerm, RoundInfo, ServerRule, Uploads
from benchmark.fl.losses import state_or_zeros
from benchmark.fl.presets import register_preset
from benchmark.fl.registry import CLIENT_TERMS, SERVER_RULES
from benchmark.fl.servers import GlobalLr
from benchmark.lazy import torch

CONTROL = "control"  # broadcast name of c
CONTROL_DELTA = "control_delta"  # uplink name of c_i⁺ − c_i


@SERVER_RULES.register
class ScaffoldServer(ServerRule):
    name = "scaffold"
    Params = GlobalLr
    broadcasts, consumes, requires_terms = (CONTROL,), (CONTROL_DELTA,), ("scaffold",)

    def init_state(self, theta):
        return {"c": torch.zeros_like(theta)}

    def broadcast(self, theta, state, rnd):
        return {"model": theta, CONTROL: state["c"]}

    def update(self, theta, state, sent, up: Uploads, rnd: RoundInfo):
        c = state["c"] + up.messages[CONTROL_DELTA].sum(0) / rnd.num_clients
        return theta + self.p.global_lr * up.mean(), {"c": c}


@CLIENT_TERMS.register
class ScaffoldTerm(ClientTerm):
    name = "scaffold"
    KEY = "scaffold.c"
    reads, produces = (CONTROL,), (CONTROL_DELTA,)
    vmappable = True  # no loss: direction and finish run per client, outside vmap

    def direction(self, ctx: ClientContext, w, g):
        return g - state_or_zeros(ctx.state, self.KEY, w) + ctx.received[CONTROL]

    def finish(self, ctx: ClientContext, w):
        c_i = state_or_zeros(ctx.state, self.KEY, w)
        c_new = c_i - ctx.received[CONTROL] + (ctx.start - w) / ctx.lr_sum
        ctx.messages[CONTROL_DELTA] = c_new - c_i
        ctx.state[self.KEY] = c_new


register_preset("scaffold", "SCAFFOLD", {"rule": "scaffold"}, [{"term": "scaffold"}])
