"""One job's round loop. Knows nothing of YAML, MLflow or results files: it takes resolved
objects and reports each evaluated round through a callback."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import torch
from torch import nn

from benchmark.data.participation import pool_entrants, sample_clients
from benchmark.engine.convex import RegularisedLogistic
from benchmark.engine.fed_data import FederatedData
from benchmark.engine.local import compiled, evaluate, make_forward
from benchmark.engine.trainers import TRAINERS
from benchmark.fl.base import RoundInfo, Uploads
from benchmark.fl.flat import ParamSpec, flat_params
from benchmark.fl.method import Method
from benchmark.fl.state import make_client_store
from benchmark.metrics import ema_update
from benchmark.rng import Stream, generator
from benchmark.suite.schema import JobConfig


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


class Simulation:
    def __init__(
        self, job: JobConfig, data: FederatedData, model: nn.Module, device: str = "cpu", state_dir: Path | None = None
    ):
        self.job = job
        self.device = torch.device(device)
        self.data = data.to(self.device)
        self.model = model.to(self.device)
        self.spec = ParamSpec.of(self.model)
        self.forward = make_forward(self.model, self.spec, job.precision)
        if job.compile:
            self.forward = compiled(self.forward, self.device)
        self.method = Method.build(job.method)
        self.clients = make_client_store(job.client_state, data.num_clients, state_dir)
        self.sizes = self.data.sizes()
        # the trainer in use ("auto": None until the first round's probe chose), and that probe
        self.execution: str | None = None if job.execution == "auto" else job.execution
        self.execution_probe: dict | None = None
        # per trainer, the local step it takes (engine/low_rank_step.for_job): a FusedStep or why the plain one
        self.local_step: dict = {}
        theta = flat_params(self.model).to(self.device)
        self.progress = Progress(theta=theta, server_state=self.method.server.init_state(theta))

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
            "clients": self.clients.state_dict(),
            # `execution: auto`'s choice: a resumed job keeps the trainer its probe chose (probing
            # again could choose the other, whose rounding differs, and resume would not be exact)
            "execution": {"mode": self.execution, "probe": self.execution_probe},
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
        self.progress = Progress(
            round=s["round"],
            theta=s["theta"].to(self.device),
            server_state={k: v.to(self.device) for k, v in s["server_state"].items()},
            ema=s["ema"],
            bytes_down=s["bytes_down"],
            bytes_up=s["bytes_up"],
        )
        self.clients.load_state_dict(s["clients"])
        if self.job.execution == "auto" and s.get("execution", {}).get("mode") is not None:
            self.execution, self.execution_probe = s["execution"]["mode"], s["execution"]["probe"]

    # -- one round ------------------------------------------------------------------------
    def round_info(self, t: int) -> RoundInfo:
        lr = self.job.local.lr * self.job.local.lr_decay**t
        return RoundInfo(
            round=t,
            lr=lr,
            num_clients=self.data.num_clients,
            spec=self.spec,
            base_lr=self.job.local.lr,
            weight_decay=self.job.local.weight_decay,
        )

    def run_round(self, t: int) -> float:
        """Advance from round t to t+1; returns the participants' weighted mean training loss."""
        job, p, m = self.job, self.progress, self.method
        rnd = self.round_info(t)
        pool = job.participation.pool
        if pool is not None and pool.reset_state:
            for cid in pool_entrants(job.seed, t, self.data.num_clients, pool):
                self.clients.drop(cid)
        chosen = sample_clients(job.seed, t, self.data.num_clients, job.participation)
        sent = m.server.broadcast(p.theta, p.server_state, rnd)
        received, down_bytes = {}, 0
        for name, tensor in sent.items():  # one broadcast, delivered to every participant
            received[name], nbytes = m.downlink.transmit(tensor, self.spec, generator(job.seed, Stream.CODEC, t, -1))
            down_bytes += nbytes * len(chosen)

        outcomes = TRAINERS[job.execution](self, chosen, rnd, received)
        messages: dict[str, list[torch.Tensor]] = {}
        up_bytes = 0
        for o in outcomes:
            self.clients.put(o.client_id, o.state)
            gen = generator(job.seed, Stream.CODEC, t, o.client_id)
            for name, vec in {"delta": o.final - o.start, **o.messages}.items():
                decoded, nbytes = m.uplink.transmit(vec, self.spec, gen)
                messages.setdefault(name, []).append(decoded)
                up_bytes += nbytes
        losses = [o.loss for o in outcomes]

        n = self.sizes[chosen].to(self.device, torch.float32)
        up = Uploads(
            chosen,
            n,
            torch.tensor([o.lr_sum for o in outcomes], dtype=torch.float32, device=self.device),
            {k: torch.stack(v) for k, v in messages.items()},
        )
        p.theta, p.server_state = m.server.update(p.theta, p.server_state, received, up, rnd)
        p.round, p.bytes_down, p.bytes_up = t + 1, p.bytes_down + down_bytes, p.bytes_up + up_bytes
        return float((up.weights.cpu() * torch.tensor(losses)).sum())

    def eval_params(self) -> torch.Tensor:
        """The model evaluation reports on: θ, or what the server rule names (FedAc: averaged w_ag)."""
        return self.method.server.eval_params(self.progress.theta, self.progress.server_state)

    def evaluate(self) -> tuple[float, float]:
        src = self.data.src
        return evaluate(self.forward, self.eval_params(), src.test_x, src.test_y, self.data.preprocess)

    def evaluate_validation(self) -> tuple[float, float]:
        """(accuracy, loss) on the examples held out of the clients' training data (select: on validation)."""
        src, rows = self.data.src, self.data.validation
        return evaluate(self.forward, self.eval_params(), src.train_x[rows], src.train_y[rows], self.data.preprocess)

    @cached_property
    def objective(self) -> RegularisedLogistic:
        """F of `suboptimality: true` jobs: the federation's ℓ2-regularised training objective."""
        return RegularisedLogistic.of_federation(self.data, self.spec, self.job.local.weight_decay)

    def run(
        self,
        on_eval: Callable[[dict], None] | None = None,
        on_round: Callable[[int], None] | None = None,
        stop_after: int | None = None,
    ) -> list[dict]:
        """Run the remaining rounds; returns the metric records of the evaluated rounds."""
        job, records = self.job, []
        last = job.rounds if stop_after is None else min(job.rounds, stop_after)
        for t in range(self.progress.round, last):
            train_loss = self.run_round(t)
            r = t + 1
            if not math.isfinite(train_loss):
                raise Diverged(r, "training loss")
            if not bool(torch.isfinite(self.progress.theta).all()):
                raise Diverged(r, "parameters")
            if job.evaluates(r):
                acc, loss = self.evaluate()
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
                if self.data.validation is not None:
                    rec["val_acc"], rec["val_loss"] = self.evaluate_validation()
                if job.suboptimality:
                    rec["subopt"] = self.objective.suboptimality(self.eval_params())
                records.append(rec)
                if on_eval:
                    on_eval(rec)
            if on_round:
                on_round(r)
        return records

    def final_state_dict(self) -> dict[str, torch.Tensor]:
        """The model the metrics were measured on (θ; FedAc's averaged w_ag)."""
        return {k: v.detach().cpu().clone() for k, v in self.spec.unflatten(self.eval_params()).items()}
