"""A job's dataset loaded, checked and fingerprinted once per process, without importing torch
itself: a loader that returns numpy arrays (a9a) leaves a FedAc-protocol run torch-free;
`load_source` gives every other consumer torch tensors."""

from __future__ import annotations

import functools
import json

from pydantic import ValidationError

from benchmark.data.source import DATASETS, SourceData, check_source, data_root, load_dataset
from benchmark.errors import UserError
from benchmark.job.config import JobConfig
from benchmark.params import pydantic_problems


def _where(name: str, root: str | None) -> str:
    """Where a loaded dataset's files are, for messages about their content."""
    if (probe := DATASETS.get(name).probe) is not None:
        return f"files under {probe(data_root(root)).path}"
    return "as its loader built it from params"


@functools.lru_cache(maxsize=4)
def _load_source(name: str, params_json: str, root: str | None) -> SourceData:
    try:
        src = load_dataset(name, json.loads(params_json), data_root(root))
        return check_source(src, name, _where(name, root))
    except ValidationError as err:  # params swept by a grid are only seen here
        found = "; ".join(f"{p}: {m}" for p, m in pydantic_problems(err, "params"))
        raise UserError(f"dataset {name!r}: {found}") from None
    except (ValueError, TypeError) as err:
        raise UserError(f"dataset {name!r}: bad params: {err}") from None


def _source_key(job: JobConfig) -> tuple[str, str, str | None]:
    d = job.dataset
    DATASETS.require(d.name)
    return d.name, json.dumps(d.params, sort_keys=True), d.root


def load_source(job: JobConfig) -> SourceData:
    """The job's dataset as torch tensors (loaded and checked once per process)."""
    return _tensors(*_source_key(job))


def load_arrays(job: JobConfig) -> SourceData:
    """The job's dataset as its loader gives it: numpy arrays for the datasets loaded without torch
    (a9a: the FedAc protocol's engine runs on them), torch tensors for the others."""
    return _load_source(*_source_key(job))


@functools.lru_cache(maxsize=4)
def _tensors(name: str, params_json: str, root: str | None) -> SourceData:
    return _load_source(name, params_json, root).tensors()


@functools.lru_cache(maxsize=16)
def _fingerprint(name: str, params_json: str, root: str | None) -> str:
    return _load_source(name, params_json, root).fingerprint()


def data_fingerprint(job: JobConfig) -> str:
    """The fingerprint of the data `job` trains on (loads and checks it, once per process)."""
    return _fingerprint(*_source_key(job))
