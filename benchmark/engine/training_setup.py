"""`TrainingSetup`: everything a trainer reads of a job, resolved once when the simulation is built
(model, its flat forward, the method's parts, the local-training settings, the federated data and
the per-client state store), so trainers take one typed object instead of the whole simulation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import torch
from torch import nn

from benchmark.engine.fed_data import Batch, FederatedData
from benchmark.engine.local import compiled, make_forward
from benchmark.engine.memory_format import channels_last_pays
from benchmark.fl.base import ClientContext, RoundInfo
from benchmark.fl.flat import ParamSpec
from benchmark.fl.method import Method
from benchmark.fl.state import ClientStateStore, MemmapClientStateStore, make_client_store
from benchmark.job.config import JobConfig
from benchmark.job.settings import LocalTraining

# a client's batch positions in a round: (example positions, local epoch) per step (FederatedData.batch_positions)
Positions = list[tuple[torch.Tensor, int]]


@dataclass
class TrainingSetup:
    model: nn.Module
    spec: ParamSpec
    forward: Callable  # forward(w_flat, x, features=False, **model_kwargs): local.make_forward
    method: Method
    data: FederatedData
    clients: ClientStateStore | MemmapClientStateStore  # each client's persistent state between its rounds
    local: LocalTraining
    seed: int
    device: torch.device
    precision: str  # fp32 | bf16 | fp16
    compile: bool  # the forward is torch.compiled (the fused low-rank step does not apply then)
    vmap_chunk: int | None  # vectorised training: at most this many clients per vmap call

    @classmethod
    def for_job(
        cls, job: JobConfig, data: FederatedData, model: nn.Module, device: str = "cpu", state_dir: Path | None = None
    ) -> TrainingSetup:
        dev = torch.device(device)
        model = model.to(dev)
        spec = ParamSpec.of(model)
        forward = make_forward(model, spec, job.precision, channels_last_pays(model, dev))
        return cls(
            model=model,
            spec=spec,
            forward=compiled(forward, dev) if job.compile else forward,
            method=Method.build(job.method),
            data=data.to(dev),
            clients=make_client_store(job.client_state, data.num_clients, state_dir),
            local=job.local,
            seed=job.seed,
            device=dev,
            precision=job.precision,
            compile=job.compile,
            vmap_chunk=job.vmap_chunk,
        )

    @cached_property
    def sizes(self) -> torch.Tensor:
        """Each client's number of training examples."""
        return self.data.sizes()

    def client_batches(self, rnd: int, client: int) -> list[Batch]:
        return self.data.client_batches(self.seed, rnd, client, self.local)

    def batch_positions(self, chosen: list[int], rnd: int) -> list[Positions]:
        """Each chosen client's batch positions in round `rnd` (no batch gathered)."""
        return [self.data.batch_positions(self.seed, rnd, cid, self.local) for cid in chosen]

    def client_context(self, cid: int, rnd: RoundInfo, received: dict[str, torch.Tensor]) -> ClientContext:
        return ClientContext(
            client_id=cid,
            rnd=rnd,
            received=received,
            num_samples=int(self.sizes[cid]),
            forward=self.forward,
            state=self.clients.get(cid, self.device),
            class_counts=self.data.class_counts(cid),
            total_samples=int(self.sizes.sum()),
        )
