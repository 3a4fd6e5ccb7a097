"""Whether a job's config has a field: what scopes a `--set PATH=VALUE` to the jobs it can apply to
(`method.server.lam` to the methods whose server rule has λ, set or at its default)."""

from __future__ import annotations

import typing

from pydantic import BaseModel

from benchmark.fl.spec import MethodSpec
from benchmark.job.config import JobConfig
from benchmark.params import model_in

COMPONENTS = {"server": "rule", "uplink": "codec", "downlink": "codec"}


def has_field(config: dict, path: str) -> bool:
    """`config`: a job config as a mapping (its method a MethodSpec, as expand builds it, or its dump)."""
    head, _, rest = path.partition(".")
    if head == "method" and rest:
        method = config["method"]
        return _method_has(method if isinstance(method, MethodSpec) else MethodSpec.model_validate(method), rest)
    if head == "dataset" and rest.startswith("params."):
        from benchmark.data.source import DATASETS

        name = config["dataset"]["name"]
        return name in DATASETS and rest.split(".")[1] in DATASETS.get(name).params.model_fields
    return _model_has(JobConfig, path.split("."))


def _model_has(model: type[BaseModel], keys: list[str]) -> bool:
    field = model.model_fields.get(keys[0])
    if field is None:
        return False
    if len(keys) == 1:
        return True
    inner = model_in(field.annotation)
    if inner is not None:
        return _model_has(inner, keys[1:])
    return any(typing.get_origin(a) is dict for a in (field.annotation, *typing.get_args(field.annotation)))


def _method_has(method: MethodSpec, rest: str) -> bool:
    part, _, name = rest.partition(".")
    if part == "client" and name:
        term, _, name = name.partition(".")
        terms = method.client
        spec = terms[int(term)] if term.isdigit() and int(term) < len(terms) else method.term(term)
        key = "term"
    elif part in COMPONENTS:
        spec, key = getattr(method, part), COMPONENTS[part]
    else:
        return part in ("label", "client") and not name
    if spec is None:
        return False
    param = name.split(".")[0]
    return not param or param == key or param in type(spec.params).model_fields
