"""The three parts a federated method is composed of: server rule, client terms, codecs.

Each part is a small class with a pydantic `Params` model (validated from YAML) and pure
tensor logic on flat parameter vectors. A method is one server rule + a list of client
terms + an uplink and a downlink codec; presets (`presets.py`) only name compositions.

Local step convention (docs/algorithms.md, "Local training"): g = clip(∇ loss, clip_norm) + weight_decay · w,
then every client term may rewrite the direction (SCAFFOLD, FedCM), then w ← w − η g.
A term may move the point the gradient is taken at and take the step itself (FedAc's
`grad_point` / `step`); every other method leaves both at their defaults.

A part's declarations (name, Params, what it broadcasts, reads, requires) are class attributes
that validating a suite reads without torch: method files bind it with
`from benchmark.lazy import torch` and use it only inside methods (benchmark/lazy.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from benchmark.fl.flat import ParamSpec
from benchmark.lazy import torch
from benchmark.params import StrictParams


@dataclass(frozen=True)
class LrSchedule:
    """The local learning rate of every step: η_0 d^t in round t, times d^epoch inside the round
    with intra-round decay (the official FedACG code's). The one place the formula lives."""

    base: float  # η_0
    decay: float = 1.0  # d
    intra_round: bool = False

    def round_lr(self, t: int) -> float:
        return self.base * self.decay**t

    def step_lr(self, t: int, epoch: int) -> float:
        """The lr of a step in local epoch `epoch` of round t."""
        return self.round_lr(t) * (self.decay**epoch if self.intra_round else 1.0)


@dataclass
class RoundInfo:
    """What every part may know about the current round."""

    round: int
    schedule: LrSchedule
    num_clients: int  # N: all clients of the federation
    spec: ParamSpec
    weight_decay: float = 0.0  # local.weight_decay λ (FedAc's strong convexity μ unless set)
    seed: int = 0  # the job's training seed (what `rng` streams are keyed by)
    _rngs: dict = field(default_factory=dict, repr=False, compare=False)

    def rng(self, device: str | torch.device = "cpu") -> torch.Generator:
        """The server side's random stream of this round, for a randomised server rule or codec:
        keyed by the job's seed and the round only, so it differs across seeds, is the same for a
        resumed job, and no other draw (sampling, batches, another part) shifts it."""
        return part_rng(self._rngs, self.seed, self.round, -1, device)

    @property
    def lr(self) -> float:
        """This round's local learning rate (after round decay)."""
        return self.schedule.round_lr(self.round)

    @property
    def base_lr(self) -> float:
        """η_0 before any decay (FedDC's drift scale)."""
        return self.schedule.base

    def step_lr(self, epoch: int) -> float:
        return self.schedule.step_lr(self.round, epoch)


@dataclass
class Uploads:
    """The messages of one round's participating clients, stacked (row i = client i)."""

    client_ids: list[int]
    num_samples: torch.Tensor  # (M,) float
    lr_sums: torch.Tensor  # (M,) float: Σ_k η_k of each client's steps
    messages: dict[str, torch.Tensor]  # name -> (M, P); always contains "delta" = w_K − x_i

    @property
    def weights(self) -> torch.Tensor:
        """Aggregation weights ω_i = n_i / Σ n_j."""
        return self.num_samples / self.num_samples.sum()

    def mean(self, name: str = "delta") -> torch.Tensor:
        """Σ ω_i · message_i, one fused reduction."""
        return self.weights @ self.messages[name]


class ServerRule:
    """What is broadcast each round, and how the aggregate becomes the next global model."""

    name: ClassVar[str]
    Params: ClassVar[type[StrictParams]] = StrictParams
    # What this rule exchanges beyond "model" and "delta", and the client terms it cannot work
    # without; method resolution checks every pairing against these (fl/pairing.py).
    broadcasts: ClassVar[tuple[str, ...]] = ()
    consumes: ClassVar[tuple[str, ...]] = ()
    requires_terms: ClassVar[tuple[str, ...]] = ()
    # Hyper-parameters that are one quantity with the same-named parameter of `requires_terms`
    # (FedDyn's α): set in either place, resolution copies it to the other.
    shared_params: ClassVar[tuple[str, ...]] = ()

    def __init__(self, params: StrictParams):
        self.p = params

    def init_state(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        return {}

    def broadcast(self, theta: torch.Tensor, state: dict, rnd: RoundInfo) -> dict[str, torch.Tensor]:
        """Tensors sent to every participating client; "model" is the start point x_i."""
        return {"model": theta}

    def update(
        self, theta: torch.Tensor, state: dict, sent: dict[str, torch.Tensor], up: Uploads, rnd: RoundInfo
    ) -> tuple[torch.Tensor, dict]:
        raise NotImplementedError

    def eval_params(self, theta: torch.Tensor, state: dict) -> torch.Tensor:
        """The model that evaluation reports on (FedAc: the averaged w_ag, not θ)."""
        return theta


@dataclass
class ClientContext:
    """Everything one client's local training may read; terms write `state` and `messages`."""

    client_id: int
    rnd: RoundInfo
    received: dict[str, torch.Tensor]  # what the server broadcast (flat tensors)
    num_samples: int
    forward: Callable[..., Any]  # forward(w_flat, x, features=False) -> logits | (logits, features)
    state: dict[str, torch.Tensor]  # this client's persistent state (empty for a new client)
    class_counts: torch.Tensor  # (num_classes,) labels in this client's data
    total_samples: int = 0  # Σ n over all N clients (FedDC's ω̃)
    steps: int = 0  # K, set before training
    lr_sum: float = 0.0  # Σ_k η_k over the K steps (= K·η_t unless the lr also decays inside the round)
    messages: dict[str, torch.Tensor] = field(default_factory=dict)  # extra uplink messages
    scratch: dict[str, Any] = field(default_factory=dict)  # per-round precomputations of terms
    _rngs: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def start(self) -> torch.Tensor:
        return self.received["model"]

    def rng(self, device: str | torch.device | None = None) -> torch.Generator:
        """This client's random stream in this round (on the model's device unless told), for a
        randomised client term: keyed by the job's seed, the round and the client, so its draws
        differ across seeds and clients, are the same in a resumed job, and shift no other randomness.
        A term that draws is not `vmappable` (vmap's clients share one context)."""
        if self.client_id < 0:
            raise RuntimeError("ctx.rng() inside vmap: a term that draws random numbers sets vmappable = False")
        return part_rng(self._rngs, self.rnd.seed, self.rnd.round, self.client_id, device or self.start.device)


def part_rng(cache: dict, seed: int, round_: int, client: int, device) -> torch.Generator:
    """One generator per (seed, round, client) and device, made on first use (Stream.PARTS)."""
    from benchmark.rng import Stream, generator

    key = str(torch.device(device))
    if key not in cache:
        cache[key] = generator(seed, Stream.PARTS, round_, client, device=key)
    return cache[key]


class ClientTerm:
    """A contribution to the local objective and/or the local step direction."""

    name: ClassVar[str]
    Params: ClassVar[type[StrictParams]] = StrictParams
    needs_features: ClassVar[bool] = False  # the forward also returns the penultimate features
    # Declarations checked when a method is resolved (fl/pairing.py): broadcast messages this
    # term reads, uplink messages it writes, server rules it only works with (empty: any), and
    # model traits it needs (models/registry.py; "features" is implied by needs_features).
    reads: ClassVar[tuple[str, ...]] = ()
    produces: ClassVar[tuple[str, ...]] = ()
    requires_rules: ClassVar[tuple[str, ...]] = ()
    model_traits: ClassVar[tuple[str, ...]] = ()
    # True promises that adjust_logits and loss are pure tensor functions of their arguments
    # and of ctx.received / ctx.start / ctx.rnd / ctx.steps and the ctx.scratch entries named in
    # `scratch_inputs` only (no ctx.state, class counts, client id or other per-client data), so
    # `execution: vectorised` can evaluate them under torch.func.vmap. begin, ce_weight, direction
    # and finish always run per client, outside vmap.
    # A term overriding grad_point or step (FedAc's two sequences) can never be vmappable.
    vmappable: ClassVar[bool] = False
    # Per-client tensors the loss needs (h_i, a previous model, class counts, ...): `begin` puts
    # them in ctx.scratch under these names, each the same shape for every client; the vectorised
    # trainer stacks them along a new dim 0 and each vmapped call sees its own slice in ctx.scratch.
    scratch_inputs: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        moves = cls.grad_point is not ClientTerm.grad_point or cls.step is not ClientTerm.step
        if cls.vmappable and moves:
            raise TypeError(f"client term {cls.__name__}: grad_point/step run outside vmap; it cannot be vmappable")

    def __init__(self, params: StrictParams):
        self.p = params

    def begin(self, ctx: ClientContext) -> None:
        """Before the first local step (precompute, e.g. the received model's outputs)."""

    def ce_weight(self, ctx: ClientContext) -> float:
        """Multiplier on the cross-entropy term (FedNTD, FedAGM reweight it)."""
        return 1.0

    def adjust_logits(self, ctx: ClientContext, logits: torch.Tensor) -> torch.Tensor:
        """Logits fed to the cross-entropy (FedLC calibrates them)."""
        return logits

    def loss(self, ctx: ClientContext, w: torch.Tensor, out: ForwardOut, x: torch.Tensor, y: torch.Tensor):
        """Extra loss added to the (weighted) cross-entropy, or None."""
        return None

    def direction(self, ctx: ClientContext, w: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        """Rewrite the step direction (after clipping and weight decay): `g` itself, changed in
        place or not, or a new tensor, never one kept elsewhere (the step scales it in place)."""
        return g

    def grad_point(self, ctx: ClientContext, w: torch.Tensor) -> torch.Tensor:
        """Where this step's loss and gradient are evaluated (FedAc: w_md); terms chain in order."""
        return w

    def step(
        self, ctx: ClientContext, w: torch.Tensor, point: torch.Tensor, g: torch.Tensor, lr: float
    ) -> torch.Tensor | None:
        """The next iterate from w, the gradient point and its direction g; None: w − lr·g.

        At most one term of a method may take the step (the first non-None answer is used).
        """
        return None

    def finish(self, ctx: ClientContext, w: torch.Tensor) -> None:
        """After the last local step: update `ctx.state`, add `ctx.messages`."""

    def regroup(self, batches: list) -> list:
        """The round's batches as the steps will take them (MB-SGD: all of them as one step)."""
        return batches


@dataclass
class ForwardOut:
    logits: torch.Tensor
    features: torch.Tensor | None = None


class Codec:
    """Encodes a message for transport; reports the bytes of the payload actually built."""

    name: ClassVar[str]
    Params: ClassVar[type[StrictParams]] = StrictParams

    def __init__(self, params: StrictParams):
        self.p = params

    def encode(self, vec: torch.Tensor, spec: ParamSpec, gen: torch.Generator | None) -> dict[str, torch.Tensor]:
        return {"values": vec}

    def decode(self, payload: dict[str, torch.Tensor], spec: ParamSpec) -> torch.Tensor:
        return payload["values"]

    def nbytes(self, payload: dict[str, torch.Tensor]) -> int:
        return sum(t.numel() * t.element_size() for t in payload.values())

    def transmit(self, vec: torch.Tensor, spec: ParamSpec, gen: torch.Generator | None) -> tuple[torch.Tensor, int]:
        """Encode, count, decode: what the receiver gets and how many bytes travelled."""
        payload = self.encode(vec, spec, gen)
        return self.decode(payload, spec), self.nbytes(payload)
