"""The contract every trainer keeps: train one round's chosen clients from what the server sent,
return their outcomes and the record of how (which trainer, `auto`'s probe, which local step),
which the simulation stores and reports in summary.json; the trainer never touches the simulation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch

from benchmark.engine import low_rank_step
from benchmark.engine.low_rank_step import FusedStep
from benchmark.engine.round_tally import SILENT, RoundTally
from benchmark.engine.rounds import ExecutionRecord
from benchmark.engine.training_setup import Positions, TrainingSetup
from benchmark.fl.base import RoundInfo

Received = dict[str, torch.Tensor]  # the round's broadcast as the clients decoded it, by message name


@dataclass
class ClientOutcome:
    client_id: int
    start: torch.Tensor  # x_i: the model this client received
    final: torch.Tensor  # w_K
    messages: dict[str, torch.Tensor]  # extra uplink messages (besides delta = w_K − x_i)
    state: dict[str, torch.Tensor]  # its persistent state after the round
    lr_sum: float  # Σ_k η_k over its steps
    loss: float  # mean training loss over its steps


@dataclass
class TrainedRound:
    outcomes: list[ClientOutcome]  # in the order of the chosen clients
    record: ExecutionRecord


@runtime_checkable
class Trainer(Protocol):
    name: str  # the `execution:` value that selects it
    setup: TrainingSetup  # the job it trains

    def why_not(self, rnd: RoundInfo, positions: list[Positions]) -> str | None:
        """Why the clients of `positions` (TrainingSetup.batch_positions) cannot be trained this way
        in round `rnd`, or None; decided before any batch is gathered or term begun."""
        ...

    def train(
        self, chosen: list[int], rnd: RoundInfo, received: Received, record: ExecutionRecord, tally: RoundTally = SILENT
    ) -> TrainedRound:
        """Train `chosen` in round `rnd` from `received` (the decoded broadcast); `record` is the
        job's record so far; `tally` counts the clients trained and their local steps (progress lines)."""
        ...


class LocalStepChoice:
    """The local step one trainer takes in a job (engine/low_rank_step.py's fused step, or the plain
    one and why), chosen at its first use and kept, so a fused step that declined stays declined."""

    def __init__(self, setup: TrainingSetup, trainer: str):
        self.setup, self.trainer = setup, trainer
        self.chosen: FusedStep | str | None = None

    def fused(self) -> FusedStep | None:
        """The fused step to take, or None for the plain one."""
        if self.chosen is None:
            s = self.setup
            self.chosen = low_rank_step.choose(self.trainer, s.model, s.spec, s.method.terms, s.precision, s.compile)
        return self.chosen if isinstance(self.chosen, FusedStep) and self.chosen.declined is None else None

    def record(self) -> dict:
        """{"step": "fused" | "plain", "why"} (after `fused` was asked)."""
        if isinstance(self.chosen, FusedStep):
            return self.chosen.record()
        return {"step": "plain", "why": self.chosen}
