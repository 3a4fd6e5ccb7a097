"""One job's round loop. Knows nothing of YAML, MLflow or results files: it takes resolved
objects and hands out each completed round (`rounds()`), which the job runner writes."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Protocol, runtime_checkable

import torch
from torch import nn

from benchmark.data.participation import pool_entrants, sample_clients
from benchmark.engine.convex import RegularisedLogistic
from benchmark.engine.fed_data import FederatedData
from benchmark.engine.local import evaluate, evaluate_by_group
from benchmark.engine.round_tally import OnClients, RoundTally
from benchmark.engine.rounds import Diverged, Progress, RoundDone
from benchmark.engine.trainers.base import ExecutionRecord
from benchmark.engine.trainers.by_execution import trainer_for
from benchmark.engine.training_setup import TrainingSetup
from benchmark.fl.base import RoundInfo, Uploads
from benchmark.fl.flat import flat_params
from benchmark.job.config import JobConfig
from benchmark.metrics import ema_update
from benchmark.rng import Stream, generator
from benchmark.round_values import measured_by_call


@runtime_checkable
class JobRounds(Protocol):
    """What the job runner (run/job_runner.py) drives: a Simulation, or a job whose rounds were
    computed elsewhere and are replayed (a protocol's replay: run/protocols.py)."""

    job: JobConfig
    progress: Progress  # rounds completed, bytes sent (a replay keeps no parameters: theta None)
    execution: ExecutionRecord  # how the rounds were trained, for summary.json
    # user name -> test accuracy (%) of the last round, where the data name each test example's user
    # and the job reached its last round in this process (ran it, or resumed there); else None
    client_accuracy: dict[str, float] | None

    @property
    def setup(self) -> TrainingSetup | None:
        """What its trainers read; None for a replay (nothing is trained here)."""
        ...

    @property
    def data_fingerprint(self) -> str: ...

    def state_dict(self) -> dict: ...

    def misfit(self, state) -> str | None:
        """Why `state` (a checkpoint's) cannot be loaded, or None."""
        ...

    def load_state_dict(self, state: dict) -> None: ...

    def rounds(self, stop_after: int | None = None, on_clients: OnClients | None = None) -> Iterator[RoundDone]:
        """The remaining rounds (up to `stop_after`), each handed out when it is done; raises Diverged.
        `on_clients`: given how far a round's training has come (engine/round_tally.py), where clients train here."""
        ...

    def final_state_dict(self) -> dict[str, torch.Tensor]: ...


class Simulation:
    """One job's rounds: the server rule and codecs around a trainer (engine/trainers/) that trains
    each round's clients and returns how it did (`execution`, for summary.json and checkpoints)."""

    def __init__(
        self, job: JobConfig, data: FederatedData, model: nn.Module, device: str = "cpu", state_dir: Path | None = None
    ):
        self.job = job
        self.setup = TrainingSetup.for_job(job, data, model, device, state_dir)
        self.trainer = trainer_for(job.execution, self.setup)
        # how the rounds were trained so far ("auto": chosen is None until the first round's probe chose)
        self.execution = ExecutionRecord(chosen=None if job.execution == "auto" else job.execution)
        theta = flat_params(self.setup.model).to(self.setup.device)
        self.progress = Progress(theta=theta, server_state=self.setup.method.server.init_state(theta))
        self.client_accuracy: dict[str, float] | None = None

    @property
    def data_fingerprint(self) -> str:
        return self.setup.data.fingerprint

    # -- resume ---------------------------------------------------------------------------
    def state_dict(self) -> dict:
        p = self.progress
        return {
            "round": p.round,
            "theta": p.theta.cpu(),
            "server_state": {k: v.cpu() for k, v in p.server_state.items()},
            "ema": p.ema,
            "bytes_down": p.bytes_down,
            "bytes_up": p.bytes_up,
            "clients": self.setup.clients.state_dict(),
            # `execution: auto`'s choice: a resumed job keeps the trainer its probe chose (probing
            # again could choose the other, whose rounding differs, and resume would not be exact)
            # and the vmap_chunk chosen from memory: a resumed job trains in the same chunks
            "execution": {
                "mode": self.execution.chosen,
                "probe": self.execution.probe,
                "vmap_chunk": self.execution.vmap_chunk,
            },
        }

    STATE_KEYS = frozenset({"round", "theta", "server_state", "ema", "bytes_down", "bytes_up", "clients", "execution"})
    # checkpoints written before the execution choice was saved (jobs that were not `auto` resume as before)
    OLD_STATE_KEYS = STATE_KEYS - {"execution"}

    def misfit(self, s) -> str | None:
        """Why `s` cannot be a state of this simulation (a foreign or damaged checkpoint), or None."""
        if not isinstance(s, dict) or set(s) not in (self.STATE_KEYS, self.OLD_STATE_KEYS):
            return f"expected the keys {sorted(self.STATE_KEYS)}"
        if not isinstance(s["theta"], torch.Tensor) or s["theta"].shape != self.progress.theta.shape:
            return f"its parameters are not a tensor of shape {tuple(self.progress.theta.shape)}"
        return None

    def load_state_dict(self, s: dict) -> None:
        device = self.setup.device
        self.progress = Progress(
            round=s["round"],
            theta=s["theta"].to(device),
            server_state={k: v.to(device) for k, v in s["server_state"].items()},
            ema=s["ema"],
            bytes_down=s["bytes_down"],
            bytes_up=s["bytes_up"],
        )
        self.setup.clients.load_state_dict(s["clients"])
        execution = s.get("execution", {})
        if self.job.execution == "auto" and execution.get("mode") is not None:
            self.execution = ExecutionRecord(execution["mode"], execution["probe"])
        self.execution = replace(self.execution, vmap_chunk=execution.get("vmap_chunk"))

    # -- one round ------------------------------------------------------------------------
    def round_info(self, t: int) -> RoundInfo:
        return RoundInfo(
            round=t,
            schedule=self.job.local.lr_schedule,
            num_clients=self.setup.data.num_clients,
            spec=self.setup.spec,
            weight_decay=self.job.local.weight_decay,
            seed=self.job.seed,
        )

    def run_round(self, t: int, on_clients: OnClients | None = None) -> float:
        """Advance from round t to t+1; returns the participants' weighted mean training loss.
        `on_clients` is told how far its training has come (engine/round_tally.py)."""
        job, p, setup = self.job, self.progress, self.setup
        m, num_clients = setup.method, setup.data.num_clients
        rnd = self.round_info(t)
        pool = job.participation.pool
        if pool is not None and pool.reset_state:
            for cid in pool_entrants(job.seed, t, num_clients, pool):
                setup.clients.drop(cid)
        chosen = sample_clients(job.seed, t, num_clients, job.participation)
        sent = m.server.broadcast(p.theta, p.server_state, rnd)
        received, down_bytes = {}, 0
        for name, tensor in sent.items():  # one broadcast, delivered to every participant
            received[name], nbytes = m.downlink.transmit(tensor, setup.spec, generator(job.seed, Stream.CODEC, t, -1))
            down_bytes += nbytes * len(chosen)

        tally = RoundTally(t + 1, len(chosen), on_clients)
        trained = self.trainer.train(chosen, rnd, received, self.execution, tally)
        self.execution, outcomes = trained.record, trained.outcomes
        messages: dict[str, list[torch.Tensor]] = {}
        up_bytes = 0
        for o in outcomes:
            setup.clients.put(o.client_id, o.state)
            gen = generator(job.seed, Stream.CODEC, t, o.client_id)
            for name, vec in {"delta": o.final - o.start, **o.messages}.items():
                decoded, nbytes = m.uplink.transmit(vec, setup.spec, gen)
                messages.setdefault(name, []).append(decoded)
                up_bytes += nbytes
        losses = [o.loss for o in outcomes]

        dtype = p.theta.dtype  # float32, or float64 on the authors' stream (setup.build_simulation)
        n = setup.sizes[chosen].to(setup.device, dtype)
        up = Uploads(
            chosen,
            n,
            torch.tensor([o.lr_sum for o in outcomes], dtype=dtype, device=setup.device),
            {k: torch.stack(v) for k, v in messages.items()},
        )
        p.theta, p.server_state = m.server.update(p.theta, p.server_state, received, up, rnd)
        p.round, p.bytes_down, p.bytes_up = t + 1, p.bytes_down + down_bytes, p.bytes_up + up_bytes
        return float((up.weights.cpu() * torch.tensor(losses, dtype=dtype)).sum())

    def eval_params(self) -> torch.Tensor:
        """The model evaluation reports on: θ, or what the server rule names (FedAc: averaged w_ag)."""
        return self.setup.method.server.eval_params(self.progress.theta, self.progress.server_state)

    def evaluate(self) -> tuple[float, float]:
        data = self.setup.data
        return evaluate(self.setup.forward, self.eval_params(), data.src.test_x, data.src.test_y, data.preprocess)

    @property
    def clients_are_users(self) -> bool:
        """A natural split of data that name each test example's user: a client's test examples are its own."""
        return self.job.dataset.split.kind == "natural" and self.setup.data.src.test_users is not None

    def evaluate_by_client(self) -> tuple[float, float]:
        """`evaluate`, in the same pass grouping the test examples by user into `client_accuracy`."""
        src, data = self.setup.data.src, self.setup.data
        acc, loss, per_user = evaluate_by_group(
            self.setup.forward, self.eval_params(), src.test_x, src.test_y, data.preprocess, src.test_users
        )
        self.client_accuracy = {
            src.user_names[u] if u < len(src.user_names) else str(u): a
            for u, a in enumerate(per_user)
            if math.isfinite(a)  # a user without test examples has no accuracy
        }
        return acc, loss

    def evaluate_validation(self) -> tuple[float, float]:
        """(accuracy, loss) on the examples held out of the clients' training data (select: on validation)."""
        data = self.setup.data
        rows = data.validation
        return evaluate(
            self.setup.forward, self.eval_params(), data.src.train_x[rows], data.src.train_y[rows], data.preprocess
        )

    @cached_property
    def objective(self) -> RegularisedLogistic:
        """F of `suboptimality: true` jobs: the federation's ℓ2-regularised training objective."""
        return RegularisedLogistic.of_federation(self.setup.data, self.setup.spec, self.job.local.weight_decay)

    def rounds(self, stop_after: int | None = None, on_clients: OnClients | None = None) -> Iterator[RoundDone]:
        """The remaining rounds, each handed out when done (with its metric record where evaluated)."""
        job = self.job
        last = job.rounds if stop_after is None else min(job.rounds, stop_after)
        declared = measured_by_call()  # the per-round values a plugin declared with a `measure`
        for t in range(self.progress.round, last):
            train_loss = self.run_round(t, on_clients)
            r = t + 1
            if not math.isfinite(train_loss):
                raise Diverged(r, "training loss")
            if not bool(torch.isfinite(self.progress.theta).all()):
                raise Diverged(r, "parameters")
            if job.evaluates(r):
                acc, loss = self.evaluate_by_client() if r == job.rounds and self.clients_are_users else self.evaluate()
                if not math.isfinite(loss):
                    raise Diverged(r, "test loss")
                self.progress.ema = ema_update(self.progress.ema, acc)
                rec = {
                    "round": r,
                    "test_acc": acc,
                    "test_loss": loss,
                    "train_loss": train_loss,
                    "ema_acc": self.progress.ema,
                    "bytes_down": self.progress.bytes_down,
                    "bytes_up": self.progress.bytes_up,
                }
                if self.setup.data.validation is not None:
                    rec["val_acc"], rec["val_loss"] = self.evaluate_validation()
                if job.suboptimality:
                    rec["subopt"] = self.objective.suboptimality(self.eval_params())
                rec.update({v.name: v.type(v.measure(self)) for v in declared})
                yield RoundDone(r, rec)
            else:
                yield RoundDone(r)
        if self.progress.round == job.rounds and self.client_accuracy is None and self.clients_are_users:
            self.evaluate_by_client()  # resumed at its last round (a checkpoint there): as a straight run has it

    def run(self, stop_after: int | None = None, on_clients: OnClients | None = None) -> list[dict]:
        """Every remaining round at once (tests, scripts); the metric records of the evaluated rounds."""
        return [done.record for done in self.rounds(stop_after, on_clients) if done.record is not None]

    def final_state_dict(self) -> dict[str, torch.Tensor]:
        """The model the metrics were measured on (θ; FedAc's averaged w_ag)."""
        return {k: v.detach().cpu().clone() for k, v in self.setup.spec.unflatten(self.eval_params()).items()}
