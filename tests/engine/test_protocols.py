"""Every implementation of the engine's two protocols has their members (checked here by name, at
run time; their signatures are for a type checker): a replay that lacked `misfit` once crashed
the resume of a stopped batched FedAc job."""

from __future__ import annotations

from test_fedac_batched import shared_suite
from vec_support import make_jobs

from benchmark.engine.setup import build_simulation
from benchmark.engine.simulation import JobRounds
from benchmark.engine.trainers.auto import AutoTrainer
from benchmark.engine.trainers.base import Trainer
from benchmark.engine.trainers.sequential import SequentialTrainer
from benchmark.engine.trainers.vectorised import VectorisedTrainer
from benchmark.run.protocol_batches import ProtocolBatches
from benchmark.suite.expand import expand


def test_a_simulation_and_a_batched_replay_are_job_rounds():
    (job,) = make_jobs(["fedavg"])
    jobs = expand(shared_suite("fedac1", lrs=[0.05]))
    for rounds in (build_simulation(job.config), ProtocolBatches(jobs).simulation_for(jobs[0])):
        assert isinstance(rounds, JobRounds), type(rounds).__name__


def test_every_trainer_is_a_trainer():
    (job,) = make_jobs(["fedavg"])
    setup = build_simulation(job.config).setup
    for cls in (SequentialTrainer, VectorisedTrainer, AutoTrainer):
        assert isinstance(cls(setup), Trainer), cls.__name__
