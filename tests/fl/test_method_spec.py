"""MethodSpec: a resolved method, typed; validated once, serialised flat (config.json, job id)."""

from __future__ import annotations

import pickle
from typing import ClassVar

import pytest
from pydantic import Field, ValidationError

from benchmark.fl.base import ServerRule, StrictParams
from benchmark.fl.method import Method, resolve_method
from benchmark.fl.registry import SERVER_RULES
from benchmark.fl.spec import MethodSpec, ServerSpec


def test_a_spec_serialises_flat_and_reads_back_equal():
    spec = resolve_method({"preset": "fedacg", "server": {"lam": 0.9}}, "m")
    flat = spec.model_dump(mode="json")
    assert flat["server"] == {"rule": "acg", "lam": 0.9}
    assert flat["client"] == [{"term": "prox", "mu": 0.01, "halved": True}] and flat["uplink"] == {"codec": "identity"}
    assert MethodSpec.model_validate(flat) == spec
    assert pickle.loads(pickle.dumps(spec)) == spec, "executors send jobs to other processes"


def test_parameters_are_validated_once_and_built_as_they_are():
    spec = resolve_method("fedacg", "m")
    method = Method.build(spec)
    assert method.server.p is spec.server.params
    assert method.terms[0].p is spec.client[0].params


def test_typed_access_by_suite_path():
    spec = resolve_method({"preset": "fedprox", "client": {"prox": {"mu": 0.5}}}, "m")
    assert spec.param("client.prox.mu") == 0.5 and spec.term("prox").params.mu == 0.5
    assert spec.param("server.global_lr") == 1.0
    for missing in ("server.lam", "client.moon.mu", "uplink.bits", "nowhere.x"):
        with pytest.raises(KeyError):
            spec.param(missing)


def test_an_unknown_part_or_parameter_in_the_flat_form_is_rejected():
    flat = resolve_method("fedavg", "m").model_dump(mode="json")
    with pytest.raises(ValidationError, match="unknown server rule 'avrage'.*did you mean 'average'"):
        MethodSpec.model_validate({**flat, "server": {"rule": "avrage"}})
    with pytest.raises(ValidationError, match="server.lam"):
        MethodSpec.model_validate({**flat, "server": {"rule": "average", "lam": 0.9}})
    acg_params = resolve_method("fedacg", "m").server.params
    with pytest.raises(ValidationError, match="server rule 'average' takes GlobalLr"):
        ServerSpec(name="average", params=acg_params)


class HalfParams(StrictParams):
    scale: float = Field(0.5, gt=0)


class Half(ServerRule):
    """A rule a plugin registers after fedbench was imported: moves half way (scale) to the average."""

    name: ClassVar[str] = "half_test_plugin"
    Params = HalfParams

    def update(self, theta, state, up, rnd):
        return theta + self.p.scale * up.mean(), {}


def test_a_part_registered_after_import_is_accepted(monkeypatch):
    monkeypatch.setitem(SERVER_RULES._items, Half.name, Half)
    spec = resolve_method({"label": "Half", "server": {"rule": "half_test_plugin", "scale": 0.25}}, "m")
    assert spec.server.params == HalfParams(scale=0.25)
    assert MethodSpec.model_validate(spec.model_dump()) == spec
    assert isinstance(Method.build(spec).server, Half)
