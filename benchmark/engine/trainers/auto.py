"""`execution: auto`: the job's first round times the sequential and the vectorised trainer on its
own clients and the job keeps the faster one.

The probe is the round's real work, not a rehearsal (so no client state is touched twice):
the first PROBE_CLIENTS clients train sequentially and the others together (vectorised), each
timed; later rounds use the trainer with fewer seconds per client. Rounds that cannot train
vectorised (the vectorised trainer's `why_not`: a term that is not vmappable, unequal local steps)
train sequentially. The choice and the timings are the returned record's `chosen` and `probe`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import torch

from benchmark.engine.round_tally import SILENT, RoundTally
from benchmark.engine.trainers.base import ExecutionRecord, Received, TrainedRound
from benchmark.engine.trainers.sequential import SequentialTrainer
from benchmark.engine.trainers.vectorised import VectorisedTrainer
from benchmark.engine.training_setup import Positions, TrainingSetup
from benchmark.fl.base import RoundInfo

PROBE_CLIENTS = 2
# fewer clients a round than this: batching cannot pay (and cannot be timed apart from the probe)
MIN_CLIENTS = PROBE_CLIENTS + 2


def timed(train: Callable[..., TrainedRound], device: torch.device, *args) -> tuple[TrainedRound, float]:
    """train(*args) and its wall seconds, the device synchronised on both ends."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    trained = train(*args)
    sync()
    return trained, time.perf_counter() - start


class AutoTrainer:
    name = "auto"

    def __init__(self, setup: TrainingSetup):
        self.setup = setup
        self.sequential = SequentialTrainer(setup)
        self.vectorised = VectorisedTrainer(setup)

    def why_not(self, rnd: RoundInfo, positions: list[Positions]) -> str | None:
        return None  # what the vectorised trainer cannot train, the sequential one does

    def train(
        self, chosen: list[int], rnd: RoundInfo, received: Received, record: ExecutionRecord, tally: RoundTally = SILENT
    ) -> TrainedRound:
        if record.chosen is None:  # not chosen yet
            positions = self.setup.batch_positions(chosen, rnd.round)
            why_not = self.vectorised.why_not(rnd, positions)
            if why_not is None and len(chosen) >= MIN_CLIENTS:
                return self._probe(chosen, rnd, received, record, positions, tally)
            reason = why_not or f"{len(chosen)} clients a round (< {MIN_CLIENTS})"
            record = replace(record, chosen=self.sequential.name, probe={"round": rnd.round, "reason": reason})
        if record.chosen == self.vectorised.name:
            positions = self.setup.batch_positions(chosen, rnd.round)  # drawn once: the check and the trainer
            if self.vectorised.why_not(rnd, positions) is None:
                return self.vectorised.train_drawn(chosen, rnd, received, record, positions, tally)
        return self.sequential.train(chosen, rnd, received, record, tally)

    def _probe(
        self,
        chosen: list[int],
        rnd: RoundInfo,
        received: Received,
        record: ExecutionRecord,
        positions: list[Positions],
        tally: RoundTally,
    ) -> TrainedRound:
        """Train round `rnd` split between the two trainers, and choose."""
        head, rest = chosen[:PROBE_CLIENTS], chosen[PROBE_CLIENTS:]
        device = self.setup.device
        seq, seq_s = timed(self.sequential.train, device, head, rnd, received, record, tally)
        vec, vec_s = timed(
            self.vectorised.train_drawn, device, rest, rnd, received, seq.record, positions[PROBE_CLIENTS:], tally
        )
        per_client = {self.sequential.name: seq_s / len(head), self.vectorised.name: vec_s / len(rest)}
        probe = {
            "round": rnd.round,
            "clients": {self.sequential.name: len(head), self.vectorised.name: len(rest)},
            "seconds_per_client": {k: round(v, 6) for k, v in per_client.items()},
        }
        faster = min(per_client, key=per_client.get)
        return TrainedRound(seq.outcomes + vec.outcomes, replace(vec.record, chosen=faster, probe=probe))
