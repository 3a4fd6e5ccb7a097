"""A job config with some of its plain top-level fields (`num_clients`, `rounds`, `seed`) set to other
values, validated field by field instead of as a whole: expand's jobs of one template differ from
its first job only there (fedac.authors_replay: 38,640 jobs, 2,760 templates), and validating each
whole config was 0.4 of `plan`'s 2 s.

It is a shortcut, never a second rule: a value its field's own validator refuses, a field this
cannot check on its own, or a model check that fails gives None, and the caller validates the whole
config as before, which fails with its usual error (tests/suite/test_plain_fields.py).
"""

from __future__ import annotations

import functools
from typing import Annotated

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

PLAIN = (int, float, str, bool, type(None))


@functools.cache
def _adapter(model: type[BaseModel], name: str) -> TypeAdapter | None:
    """The field's own validation (its type, constraints and the model's strictness), or None for a
    field that has a field validator of its own or is not a field."""
    info = model.model_fields.get(name)
    decorators = model.__pydantic_decorators__.field_validators.values()
    if info is None or any(name in d.info.fields or "*" in d.info.fields for d in decorators):
        return None
    config = {k: v for k, v in model.model_config.items() if k in ("strict", "allow_inf_nan")}
    return TypeAdapter(Annotated[info.annotation, info], config=ConfigDict(**config))


@functools.cache
def _after_checks(model: type[BaseModel]) -> tuple:
    """The model's `mode="after"` validators; its `before` ones see the raw input whole and are the
    reason a model with one it has not vetted is never built here (see `with_plain_fields`)."""
    return tuple(d.func for d in model.__pydantic_decorators__.model_validators.values() if d.info.mode == "after")


# `before` model validators that read no plain top-level field, so a config built here is what
# validating it whole would give (a new one must be added here after checking that it is so)
VETTED_BEFORE = {"_read_former_dataset"}


@functools.cache
def _vetted(model: type[BaseModel]) -> bool:
    validators = model.__pydantic_decorators__.model_validators.items()
    return {name for name, d in validators if d.info.mode != "after"} <= VETTED_BEFORE


def with_plain_fields(config: BaseModel, values: dict) -> BaseModel | None:
    """`config` with these plain top-level fields set, each value validated as validating the whole
    model would (then its `after` checks run on the result); None where that cannot be said here."""
    model = type(config)
    if not _vetted(model):
        return None
    checked = {}
    for name, value in values.items():
        adapter = _adapter(model, name)
        if adapter is None or type(value) not in PLAIN or type(getattr(config, name)) not in PLAIN:
            return None
        try:
            checked[name] = adapter.validate_python(value)
        except ValidationError:
            return None
    built = config.model_copy(update=checked)
    try:
        for check in _after_checks(model):
            built = check(built)
    except (ValueError, AssertionError):
        return None
    return built
