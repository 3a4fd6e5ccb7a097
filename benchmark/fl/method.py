"""Resolve a suite's method entry into a validated MethodSpec (fl/spec.py), and build it into objects.

A method entry is a preset name (`fedacg`, `fedmlb+acg`), or a mapping:
    {preset: fedacg, label: ..., server: {lam: 0.9}, client: {prox: {mu: 0.001}}}   # overrides
    {label: mine, server: {rule: acg, lam: 0.85}, client: [{term: prox, mu: 0.01}], uplink: {codec: qsgd}}
The spec holds every parameter with its default filled in, so a job's id changes whenever
anything that affects training changes. Parameters are validated here, once; `Method.build`
takes them as they are.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from pydantic import ValidationError

from benchmark.fl.base import ClientTerm, Codec, ServerRule
from benchmark.fl.pairing import pairing_problems, share_params
from benchmark.fl.presets import preset
from benchmark.fl.spec import CodecSpec, MethodEntry, MethodSpec, PartSpec, ServerSpec, TermSpec
from benchmark.params import pydantic_problems
from benchmark.suggest import allowed_names


class MethodProblems(Exception):
    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{p}: {m}" for p, m in problems))


def _resolve_component(spec: dict, part: type[PartSpec], path: str, problems: list) -> PartSpec | None:
    name = spec.get(part.KEY)
    try:
        params = part.registered(name).Params
    except ValueError as err:
        problems.append((f"{path}.{part.KEY}", str(err)))
        return None
    try:
        return part(name=name, params=params(**{k: v for k, v in spec.items() if k != part.KEY}))
    except ValidationError as err:
        problems.extend(pydantic_problems(err, path, params, "parameter"))
        return None


def _merge_client_overrides(base: list[dict], overrides: list | dict, path: str, problems: list) -> list[dict]:
    if isinstance(overrides, list):
        return copy.deepcopy(overrides)
    out = copy.deepcopy(base)
    by_name = {t["term"]: t for t in out}
    for term, params in overrides.items():
        if term not in by_name:
            problems.append(
                (f"{path}.{term}", f"this method has no client term {term!r}; " + allowed_names(term, by_name))
            )
            continue
        by_name[term].update(params)
    return out


def _touched(spec: dict, key: str) -> set[str]:
    """Parameter names a user's component mapping sets (all but its kind key)."""
    return set(spec) - {key}


def resolve_method(entry, path: str, touched: set[str] | None = None) -> MethodSpec:
    """The MethodSpec of a suite's method entry; raises MethodProblems with YAML paths.

    `touched`: the method-relative paths the user set ("server.alpha", "client.dyn.alpha"), where
    the caller knows them better than the entry does (a grid point laid over a resolved method);
    by default the ones the entry itself sets. A shared hyper-parameter follows them (fl/pairing.py)."""
    problems: list[tuple[str, str]] = []
    given = touched
    touched = set()
    if isinstance(entry, MethodSpec):
        entry = entry.model_dump(mode="json")
    try:
        entry = MethodEntry.model_validate(entry)  # a suite's own entries are validated already (kept as they are)
    except ValidationError as err:
        raise MethodProblems(pydantic_problems(err, path, MethodEntry, "key")) from None

    if entry.preset is not None:
        try:
            comp = preset(entry.preset)
        except KeyError as err:
            raise MethodProblems([(f"{path}.preset", err.args[0])]) from None
        comp["server"].update(entry.server or {})
        touched |= {f"server.{k}" for k in entry.server or {}}
        if entry.client is not None:
            comp["client"] = _merge_client_overrides(comp["client"], entry.client, f"{path}.client", problems)
            client = entry.client
            pairs = client.items() if isinstance(client, dict) else enumerate(client)
            touched |= {f"client.{term}.{k}" for term, params in pairs for k in _touched(params, "term")}
        for link in ("uplink", "downlink"):
            given_link = getattr(entry, link)
            if given_link is not None:
                comp[link] = {**(comp[link] if "codec" not in given_link else {}), **given_link}
        comp["label"] = entry.label if entry.label is not None else comp["label"]
    else:
        if entry.server is None:
            raise MethodProblems([(path, "a method needs 'preset:' or an explicit 'server:' (with 'rule:')")])
        comp = {
            "label": entry.label,
            "server": entry.server,
            "client": entry.client or [],
            "uplink": entry.uplink or {"codec": "identity"},
            "downlink": entry.downlink or {"codec": "identity"},
        }
        if not comp["label"]:
            problems.append((f"{path}.label", "an explicit composition needs a label (the name shown in tables)"))
        touched |= {f"server.{k}" for k in _touched(comp["server"], "rule")}
        if isinstance(comp["client"], list):
            touched |= {f"client.{i}.{k}" for i, t in enumerate(comp["client"]) for k in _touched(t, "term")}

    server = _resolve_component(comp["server"], ServerSpec, f"{path}.server", problems)
    if not isinstance(comp["client"], list):
        problems.append((f"{path}.client", "expected a list of client terms"))
        comp["client"] = []
    client = [_resolve_component(t, TermSpec, f"{path}.client[{i}]", problems) for i, t in enumerate(comp["client"])]
    links = {
        link: _resolve_component(comp[link], CodecSpec, f"{path}.{link}", problems) for link in ("uplink", "downlink")
    }
    if problems:
        raise MethodProblems(problems)
    method = MethodSpec(label=comp["label"], server=server, client=client, **links)
    problems = pairing_problems(method, path)
    if not problems:
        method, problems = share_params(method, touched if given is None else given, path)
    if problems:
        raise MethodProblems(problems)
    return method


@dataclass
class Method:
    label: str
    server: ServerRule
    terms: list[ClientTerm]
    uplink: Codec
    downlink: Codec

    @classmethod
    def build(cls, spec: MethodSpec) -> Method:
        return cls(
            label=spec.label,
            server=spec.server.build(),
            terms=[t.build() for t in spec.client],
            uplink=spec.uplink.build(),
            downlink=spec.downlink.build(),
        )
