"""What a job's rounds hand the job runner (run/job_runner.py), whoever computed them: their progress,
divergence, each completed round (`RoundDone`) and how they were trained. Apart from the engine's torch, so that a protocol's
replay (protocols/fedac/replay.py) is written without importing it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


@dataclass
class Progress:
    """Everything needed to continue a run exactly where it stopped."""

    round: int = 0  # rounds completed
    theta: torch.Tensor | None = None
    server_state: dict = field(default_factory=dict)
    ema: float | None = None
    bytes_down: int = 0
    bytes_up: int = 0


class Diverged(Exception):
    """The loss or the parameters became non-finite in round `round` (1-based); nothing after
    it means anything, and what it evaluates to (argmax of NaN logits) is not an accuracy."""

    def __init__(self, round: int, what: str):
        super().__init__(f"non-finite {what} in round {round}")
        self.round = round
        self.what = what


@dataclass(frozen=True)
class RoundDone:
    """A completed round, handed out to whoever drives the rounds (the job runner writes it): the rounds
    never call up into the layer that runs them, so a job's walk goes one way (benchmarks/job_walk.py)."""

    round: int  # rounds completed, counted from 1
    record: dict | None = None  # its metric record, where the job evaluates this round


@dataclass(frozen=True)
class ExecutionRecord:
    """How a job's rounds were trained, as summary.json states it (and a checkpoint keeps `chosen`
    and `probe`, so a resumed `auto` job keeps its trainer)."""

    chosen: str | None = None  # the trainer that trains the rounds; `auto`: None until its probe chose
    probe: dict | None = None  # `auto`: the probe's round and timings, or why it stayed sequential
    local_step: dict[str, dict] = field(default_factory=dict)  # trainer -> {"step": "fused" | "plain", "why"}
    vmap_chunk: dict | None = None  # vectorised: clients per call and why (engine/vmap_chunk.py)

    def with_local_step(self, trainer: str, step: dict) -> ExecutionRecord:
        return replace(self, local_step={**self.local_step, trainer: step})
