"""Foundations shared by every layer: the strict parameter base and the one formatter that
turns pydantic errors into (YAML path, message) pairs."""

from __future__ import annotations

import typing

from pydantic import BaseModel, ConfigDict, ValidationError

from benchmark.suggest import allowed_names


class StrictParams(BaseModel):
    """Base for every component's and dataset's parameters: unknown keys are errors, not silently ignored."""

    # strict: a YAML `true` is no number and `"5"` no integer; no inf/nan where a float is expected
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


def format_loc(loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _model_in(annotation) -> type[BaseModel] | None:
    """The pydantic model inside an annotation such as `Participation | None` or `list[X]`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        if found := _model_in(arg):
            return found
    return None


def fields_at(model: type[BaseModel] | None, loc) -> list[str]:
    """Field names of the (nested) model that `loc` points into; [] when not a model."""
    for part in loc:
        if model is None:
            return []
        if isinstance(part, str):
            field = model.model_fields.get(part)
            model = _model_in(field.annotation) if field else None
    return list(model.model_fields) if model else []


def pydantic_problems(
    err: ValidationError, prefix: str = "", model: type[BaseModel] | None = None, noun: str = "field"
) -> list[tuple[str, str]]:
    """(YAML path, message) per error; with `model`, unknown fields list the allowed names."""
    problems = []
    for e in err.errors():
        # pydantic puts union/function-validator branch names into loc; keep the real fields only
        loc = [p for p in e["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-")))]
        path = format_loc(loc)
        if prefix:
            path = prefix + ("" if not path or path.startswith("[") else ".") + path
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            allowed = fields_at(model, loc[:-1])
            msg = (
                f"unknown {noun} {loc[-1]!r}; " + allowed_names(loc[-1], allowed)
                if allowed
                else "unknown field (check its spelling and where it is nested)"
            )
        elif e["type"] in ("literal_error", "enum") and "expected" in e.get("ctx", {}):
            msg = f"{e['input']!r} is not allowed; allowed: {e['ctx']['expected']}"
        problems.append((path, msg))
    return problems
