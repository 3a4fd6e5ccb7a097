"""Execution mode (a job's `execution:`) -> the function that trains one round's chosen clients:
fn(sim, chosen, rnd, received) -> list[ClientOutcome]. Simulation.run_round looks it up here."""

from __future__ import annotations

from benchmark.engine.auto_execution import train_auto
from benchmark.engine.client_round import train_sequential
from benchmark.engine.vectorised import train_vectorised_job

TRAINERS: dict = {"sequential": train_sequential, "vectorised": train_vectorised_job, "auto": train_auto}
