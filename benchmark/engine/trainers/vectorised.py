"""`execution: vectorised`: a round's clients trained together (engine/vectorised.py), at most
`vmap_chunk` of them per call; where the job leaves it unset, the first round's first client trains
alone, its memory measured, and the chunk is chosen from that (engine/vmap_chunk.py).

A round is vectorisable when every chosen client takes the same number of steps with the same
batch size at each step (balanced splits) and every client term is `vmappable`. Otherwise the
job fails with `NotVectorisable`, never silently falling back to sequential training
(`execution: auto` asks `why_not` first and trains such rounds sequentially).
"""

from __future__ import annotations

from dataclasses import replace

from benchmark.engine import client_batched, vectorised, vmap_chunk
from benchmark.engine.peak_memory import PeakTensorMemory
from benchmark.engine.round_tally import SILENT, RoundTally
from benchmark.engine.trainers.base import ClientOutcome, ExecutionRecord, LocalStepChoice, Received, TrainedRound
from benchmark.engine.training_setup import Positions, TrainingSetup
from benchmark.errors import UserError
from benchmark.fl.base import ClientTerm, RoundInfo
from benchmark.job.settings import LocalTraining

ADVICE = (
    "set `execution: sequential` (or `auto`, which trains such rounds sequentially) for this job "
    "(in the suite's defaults or its dataset entry)"
)


class NotVectorisable(UserError):
    """A job asked for `execution: vectorised` but its rounds cannot be trained under vmap."""


def check_terms(terms: list[ClientTerm]) -> None:
    blocked = [t.name for t in terms if not t.vmappable]
    if blocked:
        raise NotVectorisable(
            f"execution: vectorised: client term(s) {', '.join(map(repr, blocked))} are not vmappable "
            f"(their loss reads per-client data or is not a pure tensor function); {ADVICE}"
        )


def _plan(steps: Positions, local: LocalTraining) -> tuple:
    """What must agree across clients: batch size per step (and epoch per step when it sets the lr)."""
    sizes = tuple(len(p) for p, _ in steps)
    return (sizes, tuple(e for _, e in steps)) if local.intra_round_decay else (sizes,)


def _describe(cid: int, steps: Positions) -> str:
    return f"client {cid}: {len(steps)} steps, batch sizes {sorted({len(p) for p, _ in steps})}"


def check_plans(chosen: list[int], positions: list[Positions], local: LocalTraining, rnd: int) -> None:
    first = _plan(positions[0], local)
    for cid, steps in zip(chosen, positions):
        if _plan(steps, local) != first:
            raise NotVectorisable(
                f"execution: vectorised needs every client of a round to take the same local steps with the "
                f"same batch sizes{' and epochs' if local.intra_round_decay else ''}; in round {rnd} "
                f"{_describe(chosen[0], positions[0])} but {_describe(cid, steps)} (unbalanced split?); {ADVICE}"
            )


class VectorisedTrainer:
    name = "vectorised"

    def __init__(self, setup: TrainingSetup):
        self.setup = setup
        self.step = LocalStepChoice(setup, self.name)
        self.chunk: int | None = setup.vmap_chunk  # None until chosen (explicit `vmap_chunk` wins)
        self.chunk_record = None if setup.vmap_chunk is None else {"chunk": setup.vmap_chunk, "why": "vmap_chunk set"}

    def why_not(self, rnd: RoundInfo, positions: list[Positions]) -> str | None:
        try:
            check_terms(self.setup.method.terms)
        except NotVectorisable as e:
            return str(e)
        plans = {_plan(steps, self.setup.local) for steps in positions}
        return None if len(plans) <= 1 else f"round {rnd.round}: clients take different local steps or batch sizes"

    def train(
        self, chosen: list[int], rnd: RoundInfo, received: Received, record: ExecutionRecord, tally: RoundTally = SILENT
    ) -> TrainedRound:
        return self.train_drawn(chosen, rnd, received, record, self.setup.batch_positions(chosen, rnd.round), tally)

    def train_drawn(
        self,
        chosen: list[int],
        rnd: RoundInfo,
        received: Received,
        record: ExecutionRecord,
        positions: list[Positions],
        tally: RoundTally = SILENT,
    ) -> TrainedRound:
        """`train`, with the clients' batch positions drawn by the caller (auto: for its check too)."""
        s = self.setup
        check_terms(s.method.terms)
        client_batched.keep_freed_memory()
        outcomes: list[ClientOutcome] = []
        if self.chunk is None and record.vmap_chunk is not None:  # resumed: the chunk chosen before
            self.chunk, self.chunk_record = record.vmap_chunk["chunk"], record.vmap_chunk
        if self.chunk is None and len(chosen) > 1:  # the first client alone, measured
            check_plans(chosen[:1], positions[:1], s.local, rnd.round)
            with PeakTensorMemory() as memory:
                outcomes += vectorised.train_together(
                    s, chosen[:1], rnd, received, positions[:1], self.step.fused(), tally
                )
            tally.clients(1)
            self.chunk, self.chunk_record = vmap_chunk.choose(len(chosen), memory.peak, memory.live, s.device)
        chunk = self.chunk or len(chosen)
        for i in range(len(outcomes), len(chosen), chunk):
            clients, steps = chosen[i : i + chunk], positions[i : i + chunk]
            check_plans(clients, steps, s.local, rnd.round)
            outcomes += vectorised.train_together(s, clients, rnd, received, steps, self.step.fused(), tally)
            tally.clients(len(clients))
        record = record.with_local_step(self.name, self.step.record())
        return TrainedRound(outcomes, replace(record, vmap_chunk=self.chunk_record))
