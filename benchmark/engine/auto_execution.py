"""`execution: auto`: the job's first round times both trainers on its own clients and the job
keeps the faster one.

The probe is the round's real work, not a rehearsal (so no client state is touched twice):
the first PROBE_CLIENTS clients train sequentially and the others together (vectorised), each
timed; later rounds use the mode with fewer seconds per client. Rounds that cannot train
vectorised (a term that is not vmappable, unequal local steps) train sequentially, checked
before any batch is gathered. The choice and the timings land in the job's summary.json.
"""

from __future__ import annotations

import time

import torch

from benchmark.engine.client_round import train_sequential
from benchmark.engine.vectorised import blocker, round_positions, train_vectorised_job
from benchmark.fl.base import RoundInfo

PROBE_CLIENTS = 2
# fewer clients a round than this: batching cannot pay (and cannot be timed apart from the probe)
MIN_CLIENTS = PROBE_CLIENTS + 2


def _timed(trainer, sim, chosen: list[int], rnd: RoundInfo, received: dict) -> tuple[list, float]:
    """(outcomes, wall seconds), the device synchronised on both ends."""
    sync = torch.cuda.synchronize if sim.device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    outcomes = trainer(sim, chosen, rnd, received)
    sync()
    return outcomes, time.perf_counter() - start


def _probe(sim, chosen: list[int], rnd: RoundInfo, received: dict, positions: list) -> list:
    """Train round `rnd` split between the two trainers, and choose."""
    head, rest = chosen[:PROBE_CLIENTS], chosen[PROBE_CLIENTS:]
    seq, seq_s = _timed(train_sequential, sim, head, rnd, received)
    vec, vec_s = _timed(lambda *args: train_vectorised_job(*args, positions[PROBE_CLIENTS:]), sim, rest, rnd, received)
    per_client = {"sequential": seq_s / len(head), "vectorised": vec_s / len(rest)}
    sim.execution = min(per_client, key=per_client.get)
    sim.execution_probe = {
        "round": rnd.round,
        "clients": {"sequential": len(head), "vectorised": len(rest)},
        "seconds_per_client": {k: round(v, 6) for k, v in per_client.items()},
    }
    return seq + vec


def train_auto(sim, chosen: list[int], rnd: RoundInfo, received: dict) -> list:
    if sim.execution is None:  # not chosen yet
        positions = round_positions(sim, chosen, rnd)
        why_not = blocker(sim, rnd, positions)
        if why_not is None and len(chosen) >= MIN_CLIENTS:
            return _probe(sim, chosen, rnd, received, positions)
        sim.execution = "sequential"
        sim.execution_probe = {
            "round": rnd.round,
            "reason": why_not or f"{len(chosen)} clients a round (< {MIN_CLIENTS})",
        }
    if sim.execution == "vectorised":
        positions = round_positions(sim, chosen, rnd)  # drawn once: the check and the trainer share them
        if blocker(sim, rnd, positions) is None:
            return train_vectorised_job(sim, chosen, rnd, received, positions)
    return train_sequential(sim, chosen, rnd, received)
