"""Build a Simulation from a resolved job: load (cached) data, split it, build the model."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import replace

import torch

from benchmark.data.cache import cache_key, cached_tensors
from benchmark.data.partition import packed_partition, partition
from benchmark.engine.augment import image_preprocessor
from benchmark.engine.fed_data import FederatedData, default_preprocess
from benchmark.engine.holdout import hold_out
from benchmark.engine.simulation import Simulation
from benchmark.engine.sources import _fingerprint, _load_source, _tensors, data_fingerprint, load_source
from benchmark.errors import UserError
from benchmark.job.config import JobConfig
from benchmark.models.registry import build_model, known_models

# source kind -> factory(src, job) -> Preprocessor(x, train, gen); other kinds use default_preprocess
PREPROCESSORS: dict = {"image": image_preprocessor}


@functools.lru_cache(maxsize=8)
def _clients(name: str, params_json: str, root: str | None, split_json: str, num_clients: int):
    """Client index tensors, cached on disk keyed by the split settings and the labels' checksum
    (a Dirichlet split of a large dataset is not free, and must never change between runs)."""
    from benchmark.job.settings import SplitConfig

    src = _tensors(name, params_json, root)
    labels = hashlib.sha256(src.train_y.numpy().tobytes()).hexdigest()
    # the cache builds with data/'s own function, so the walk goes down into data/ and back, not up again
    build = functools.partial(packed_partition, src, num_clients, SplitConfig(**json.loads(split_json)))
    try:
        t = cached_tensors("split", cache_key(name, split_json, num_clients, labels), build)
    except ValueError as err:  # the split's own complaint (too few examples, ...): a cached read never raises it
        raise UserError(f"dataset {name!r}: cannot split: {err}") from None
    return list(torch.split(t["indices"], t["sizes"].tolist()))


def forget_loaded_data() -> None:
    """Drop this process's loaded datasets, so the next load reads the files again (they changed)."""
    for cached in (_load_source, _tensors, _fingerprint, _clients):
        cached.cache_clear()


def federated_data(job: JobConfig) -> FederatedData:
    d = job.dataset
    src = load_source(job)
    if d.split.kind == "shared":  # nothing to split or cache: one index tensor for all clients
        data = FederatedData(
            src, partition(src, job.num_clients, d.split), default_preprocess(src), data_fingerprint(job), shared=True
        )
    else:
        clients = _clients(
            d.name, json.dumps(d.params, sort_keys=True), d.root, d.split.model_dump_json(), job.num_clients
        )
        factory = PREPROCESSORS.get(src.kind)
        preprocess = factory(src, job) if factory else default_preprocess(src)
        data = FederatedData(src, list(clients), preprocess, data_fingerprint(job))
    return hold_out(data, job.select.holdout, d.split.seed) if job.select.on == "validation" else data


def build_simulation(job: JobConfig, device: str = "cpu", state_dir=None) -> Simulation:
    data = federated_data(job)
    if job.model.name not in known_models():
        raise UserError(f"unknown model {job.model.name!r}; known: {', '.join(known_models())}")
    authors = job.dataset.split.samples == "authors_numpy"
    # the authors' stream replays their float64 numpy code: model, data and every step in float64
    dtype = torch.float64 if authors else torch.get_default_dtype()
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # the model built in dtype, so that its init's draws are stored as drawn
    try:
        model = build_model(
            job.model.name, data.src.input_shape, data.src.num_classes, job.model.params, job.model.init, job.seed
        )
    except (TypeError, ValueError) as err:
        raise UserError(f"model {job.model.name!r}: bad params {job.model.params}: {err}") from None
    finally:
        torch.set_default_dtype(previous)
    if authors:  # their samples follow w0's draw in the same generator
        data.authors_w0_size = sum(p.numel() for p in model.parameters())
        src = data.src
        data.src = replace(src, train_x=src.train_x.to(dtype), test_x=src.test_x.to(dtype))
    return Simulation(job, data, model, device, state_dir)
