"""`execution: sequential`: a round's clients trained one after another (the reference every
other trainer must agree with)."""

from __future__ import annotations

from benchmark.engine.local import train_client
from benchmark.engine.round_tally import SILENT, RoundTally
from benchmark.engine.trainers.base import ClientOutcome, ExecutionRecord, LocalStepChoice, Received, TrainedRound
from benchmark.engine.training_setup import Positions, TrainingSetup
from benchmark.fl.base import RoundInfo


class SequentialTrainer:
    name = "sequential"

    def __init__(self, setup: TrainingSetup):
        self.setup = setup
        self.step = LocalStepChoice(setup, self.name)

    def why_not(self, rnd: RoundInfo, positions: list[Positions]) -> str | None:
        return None  # any round trains one client at a time

    def train(
        self, chosen: list[int], rnd: RoundInfo, received: Received, record: ExecutionRecord, tally: RoundTally = SILENT
    ) -> TrainedRound:
        s, outcomes = self.setup, []
        fused = self.step.fused()
        for cid in chosen:
            ctx = s.client_context(cid, rnd, received)
            w, loss = train_client(ctx, s.method.terms, s.client_batches(rnd.round, cid), s.local, fused, tally)
            outcomes.append(ClientOutcome(cid, ctx.start, w, ctx.messages, ctx.state, ctx.lr_sum, loss))
            tally.clients(1)
        return TrainedRound(outcomes, record.with_local_step(self.name, self.step.record()))
