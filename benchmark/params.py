"""Foundations shared by every layer: the strict parameter base, the declaration of which fields
are a job's identity, and the one formatter that turns pydantic errors into (YAML path, message) pairs."""

from __future__ import annotations

import enum
import functools
import json
import typing

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo

from benchmark.suggest import allowed_names


class StrictParams(BaseModel):
    """Base for every component's and dataset's parameters: unknown keys are errors, not silently ignored."""

    # strict: a YAML `true` is no number and `"5"` no integer; no inf/nan where a float is expected
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class Identity(enum.Enum):
    """Whether a field is part of a job's identity: its id (so where its results are found) and
    which jobs a protocol batches together (run/protocols.py). Every field is ALWAYS unless declared otherwise."""

    ALWAYS = "identity"  # it can change the trajectory
    NEVER = "not identity"  # how and where a job runs, or what it reports: in config.json, never in the id
    # added after jobs existed: left out of every dump (so of the id) at its default, so their ids stand
    UNLESS_DEFAULT = "identity unless default"


def declared(default=..., *, identity: Identity, default_factory=None, **kwargs) -> typing.Any:
    """A pydantic Field with its identity class (no default: required)."""
    if identity is Identity.UNLESS_DEFAULT:
        at_default = default_factory() if default_factory else default
        kwargs["exclude_if"] = lambda value: value == at_default
    given = {"default_factory": default_factory} if default_factory else {"default": default}
    return Field(**given, json_schema_extra={"identity": identity.value}, **kwargs)


def identity_of(field: FieldInfo) -> Identity:
    extra = field.json_schema_extra
    return Identity(extra.get("identity", Identity.ALWAYS.value)) if isinstance(extra, dict) else Identity.ALWAYS


@functools.cache  # read for every field of every job (10^5 jobs: millions of reads)
def _identities(model: type[BaseModel]) -> tuple[tuple[str, Identity], ...]:
    return tuple((name, identity_of(field)) for name, field in model.model_fields.items())


def identity_dump(model: BaseModel) -> dict:
    """The model's JSON dump without its NEVER fields (UNLESS_DEFAULT ones at their default are not
    dumped at all): what identifies a job."""
    data: dict = {}
    for part, _ in _identity_parts(model, {}):
        data.update(part)
    return data


_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), default=str
)  # built once: json.dumps builds one a call


def canonical_json(obj) -> str:
    return _CANONICAL.encode(obj)


def identity_json(model: BaseModel, memo: dict | None = None) -> str:
    """canonical_json(identity_dump(model)), built from each field's JSON. `memo` keeps the JSON of
    each nested model by its object (held there, so its id stays its own) and of each plain value:
    expand's jobs share their sections, and a section shared by 10^5 jobs is dumped and encoded
    once, not 10^5 times."""
    return joined(identity_members(model, memo))


def identity_members(model: BaseModel, memo: dict | None = None) -> dict[str, str]:
    """identity_json's members, `"key":value` by key (a model differing in one plain field needs only
    that member changed: `with_member`)."""
    memo = {} if memo is None else memo
    members = {}
    for part, encoded in _identity_parts(model, memo):
        members.update(encoded or {key: _member(key, v, memo) for key, v in part.items()})
    return members


def with_member(members: dict[str, str], key: str, value, memo: dict) -> dict[str, str]:
    """`members` with the plain field `key` (an ALWAYS one, in them) set to `value`."""
    return {**members, key: _member(key, value, memo)}


def joined(members: dict[str, str]) -> str:
    return "{" + ",".join(members[key] for key in sorted(members)) + "}"


def _member(key: str, value, memo: dict) -> str:
    """`"key":value` in canonical JSON; memoised for ints, strings, booleans and None (a float's
    -0.0 equals 0.0 as a dict key, but not in JSON)."""
    if type(value) not in (int, str, bool, type(None)):
        return f"{canonical_json(key)}:{canonical_json(value)}"
    cached = ("member", key, type(value), value)
    if cached not in memo:
        memo[cached] = f"{canonical_json(key)}:{canonical_json(value)}"
    return memo[cached]


def _identity_parts(model: BaseModel, memo: dict):
    """(dump, {key: its JSON member} or None) of the plain fields together, then of each nested model."""
    fields = _identities(type(model))
    values = model.__dict__
    sections = {name for name, _ in fields if isinstance(values[name], BaseModel)}
    never = {name for name, identity in fields if identity is Identity.NEVER}
    data = model.model_dump(mode="json", exclude=sections | never)
    for name, identity in fields:
        if name not in sections and isinstance(values[name], list):
            _drop_never_field(model, name, identity, data)
    data.update(_constants(model))
    yield data, None
    for name in sections - never:
        value = values[name]
        key = (name, id(value))
        if key not in memo:
            part = model.model_dump(mode="json", include={name})  # {} where exclude_if leaves it out
            _drop_never_field(model, name, Identity.ALWAYS, part)
            encoded = {k: f"{canonical_json(k)}:{canonical_json(v)}" for k, v in part.items()}
            memo[key] = (value, part, encoded)
        yield memo[key][1:]


def _drop_never(model: BaseModel, node: dict) -> None:
    for name, identity in _identities(type(model)):
        _drop_never_field(model, name, identity, node)
    node.update(_constants(model))


def _constants(model: BaseModel) -> dict:
    """Keys a model's identity holds at fixed values, besides its fields: job/config.HASHED_AS_NULL."""
    return getattr(type(model), "identity_constants", {})


def _drop_never_field(model: BaseModel, name: str, identity: Identity, node: dict) -> None:
    if identity is Identity.NEVER:
        node.pop(name, None)
        return
    value = getattr(model, name)
    if isinstance(value, BaseModel):  # a part's params are dumped flat into the part itself
        _drop_never(value, node[name] if isinstance(node.get(name), dict) else node)
    elif isinstance(value, list) and isinstance(node.get(name), list):
        for item, item_node in zip(value, node[name]):
            if isinstance(item, BaseModel):
                _drop_never(item, item_node)


def format_loc(loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def model_in(annotation) -> type[BaseModel] | None:
    """The pydantic model inside an annotation such as `Participation | None` or `list[X]`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        if found := model_in(arg):
            return found
    return None


def fields_at(model: type[BaseModel] | None, loc) -> list[str]:
    """Field names of the (nested) model that `loc` points into; [] when not a model."""
    key_next = False  # a mapping of models (name -> model): the next part is a key, not a field
    for part in loc:
        if model is None:
            return []
        if key_next:
            key_next = False
        elif isinstance(part, str):
            field = model.model_fields.get(part)
            model = model_in(field.annotation) if field else None
            key_next = field is not None and _is_mapping(field.annotation)
    return list(model.model_fields) if model else []


def _is_mapping(annotation) -> bool:
    return typing.get_origin(annotation) is dict or any(_is_mapping(a) for a in typing.get_args(annotation))


# Words YAML 1.1 reads as booleans (PyYAML's and the spec's y/n); suites read YAML 1.2, where they
# are strings (benchmark/suite/safe_yaml.py), so a boolean field given one says how to write it.
YAML11_BOOL_WORDS = frozenset(v for w in ("yes", "no", "on", "off", "y", "n") for v in (w, w.capitalize(), w.upper()))
NOT_A_BOOLEAN = "is a string: only true and false are booleans (YAML 1.2); write true or false"
NOT_A_STRING = "is a boolean (YAML 1.2: true and false are); quote it for the word"


def yaml_loc(loc) -> list:
    """An error's location as keys and indices into the YAML: pydantic puts union/function-validator
    branch names into loc; keep the real fields only."""
    return [p for p in loc if not (isinstance(p, str) and ("[" in p or p.startswith("function-")))]


def pydantic_problems(
    err: ValidationError, prefix: str = "", model: type[BaseModel] | None = None, noun: str = "field"
) -> list[tuple[str, str]]:
    """(YAML path, message) per error; with `model`, unknown fields list the allowed names."""
    problems = []
    for e in err.errors():
        loc = yaml_loc(e["loc"])
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
            wrong = e["input"]
            what = f"{str(wrong).lower()} {NOT_A_STRING}" if isinstance(wrong, bool) else f"{wrong!r} is not allowed"
            msg = f"{what}; allowed: {e['ctx']['expected']}"
        elif e["type"] == "bool_type" and e["input"] in YAML11_BOOL_WORDS:
            msg = f"{e['input']!r} {NOT_A_BOOLEAN}"
        elif e["type"] == "string_type" and isinstance(e["input"], bool):
            msg = f"{str(e['input']).lower()} {NOT_A_STRING}"
        problems.append((path, msg))
    return problems
