"""A job's trainer, from its `execution:` setting."""

from __future__ import annotations

from benchmark.engine.trainers.auto import AutoTrainer
from benchmark.engine.trainers.base import Trainer
from benchmark.engine.trainers.sequential import SequentialTrainer
from benchmark.engine.trainers.vectorised import VectorisedTrainer
from benchmark.engine.training_setup import TrainingSetup


def trainer_for(execution: str, setup: TrainingSetup) -> Trainer:
    match execution:
        case "sequential":
            return SequentialTrainer(setup)
        case "vectorised":
            return VectorisedTrainer(setup)
        case "auto":
            return AutoTrainer(setup)
    raise ValueError(f"execution {execution!r}: the suite schema admits sequential, vectorised or auto only")
