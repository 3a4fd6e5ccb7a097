"""A validated method: its server rule, client terms and codecs, each the name of a registered part
with that part's validated `Params`.

A part spec is tagged by its kind key (`rule`, `term`, `codec`); the registry is read when a spec
is validated, never at import, so parts a plugin registers later are accepted like built-in ones.
Specs serialise flat, as suites write them (`{rule: acg, lam: 0.85, ...}`): that form is what
config.json holds and what the job id hashes.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, model_serializer, model_validator

from benchmark.fl.registry import CLIENT_TERMS, CODECS, SERVER_RULES, Registry
from benchmark.params import Identity, StrictParams, declared
from benchmark.suggest import unknown_name


class PartSpec(BaseModel):
    """One part of a method: `name` in `REGISTRY`, and its parameters validated by the part's Params."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    KEY: ClassVar[str]
    REGISTRY: ClassVar[Registry]

    name: str
    params: SerializeAsAny[StrictParams]

    @classmethod
    def registered(cls, name):
        """The registered part called `name` (the registry read now: plugins included)."""
        if name not in cls.REGISTRY:
            raise ValueError(unknown_name(cls.REGISTRY.kind, name, cls.REGISTRY.names()))
        return cls.REGISTRY.get(name)

    @model_validator(mode="before")
    @classmethod
    def _flat(cls, data):
        """The suite's and config.json's flat form {KEY: name, param: value, ...}."""
        if isinstance(data, dict) and cls.KEY in data:
            params = {k: v for k, v in data.items() if k != cls.KEY}
            return {"name": data[cls.KEY], "params": cls.registered(data[cls.KEY]).Params(**params)}
        return data

    @model_validator(mode="after")
    def _params_of_the_part(self):
        expected = self.registered(self.name).Params
        if type(self.params) is not expected:
            raise ValueError(f"{self.REGISTRY.kind} {self.name!r} takes {expected.__name__}")
        return self

    @model_serializer(mode="wrap")
    def _serialise_flat(self, handler):
        return {self.KEY: self.name, **handler(self)["params"]}

    def with_params(self, **values: Any) -> PartSpec:
        """A copy with these parameters replaced (values of the same quantity, validated elsewhere)."""
        return self.model_copy(update={"params": self.params.model_copy(update=values)})

    def build(self):
        """The part itself, on these (already validated) parameters."""
        return self.REGISTRY.get(self.name)(self.params)


class ServerSpec(PartSpec):
    KEY = "rule"
    REGISTRY = SERVER_RULES


class TermSpec(PartSpec):
    KEY = "term"
    REGISTRY = CLIENT_TERMS


class CodecSpec(PartSpec):
    KEY = "codec"
    REGISTRY = CODECS


class MethodSpec(BaseModel):
    """A resolved method (fl/method.py resolve_method): what `Method.build` turns into objects.
    Frozen: one spec is shared by every job of its method."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = declared(identity=Identity.NEVER)  # the name shown in tables
    server: ServerSpec
    client: list[TermSpec] = []
    uplink: CodecSpec
    downlink: CodecSpec

    def term(self, name: str) -> TermSpec | None:
        """The client term called `name`, or None."""
        return next((t for t in self.client if t.name == name), None)

    def param(self, path: str):
        """A parameter by its suite path below `method.`: `server.lam`, `client.prox.mu`, `uplink.levels`;
        KeyError when the method has no such part or parameter."""
        where, *rest = path.split(".")
        part = self.term(rest.pop(0)) if where == "client" and rest else getattr(self, where, None)
        if not isinstance(part, PartSpec) or len(rest) != 1 or rest[0] not in type(part.params).model_fields:
            raise KeyError(path)
        return getattr(part.params, rest[0])

    @property
    def term_names(self) -> list[str]:
        return [t.name for t in self.client]


class MethodEntry(BaseModel):
    """One entry of a suite's `methods:` as written (fl/method.py resolve_method makes it a MethodSpec):
    a preset name, a preset with overrides, or an explicit composition; and its own grid. A part's
    parameters stay a mapping here: which ones exist is known once its rule, term or codec is."""

    model_config = ConfigDict(extra="forbid")

    preset: str | None = None
    label: str | None = None
    server: dict[str, Any] | None = None
    client: list[dict[str, Any]] | dict[str, dict[str, Any]] | None = Field(
        None, description="a list of terms (replaces the preset's) or term -> parameters (overrides them)"
    )
    uplink: dict[str, Any] | None = None
    downlink: dict[str, Any] | None = None
    grid: dict[str, Annotated[list[Any], Field(min_length=1)]] = Field(
        default_factory=dict, description="method-relative parameter path -> values, one job per combination"
    )

    @model_validator(mode="before")
    @classmethod
    def _preset_name(cls, data):
        if isinstance(data, str):
            return {"preset": data}
        if not isinstance(data, (dict, MethodEntry)):
            raise ValueError(f"expected a preset name or a mapping, got {type(data).__name__}")
        return data
