"""Every preset resolves with docs/algorithms.md's defaults, composes with +acg / +paq, and takes overrides."""

from __future__ import annotations

import pytest

from benchmark.fl.method import Method, MethodProblems, resolve_method
from benchmark.fl.presets import preset, preset_names

CLIENT_SIDE = ["fedavg", "fedprox", "moon", "fedmlb", "fedlc", "fedntd", "feddecorr", "fedpaq"]


def test_every_paper_method_has_a_preset():
    assert {
        "fedavg",
        "fedprox",
        "fedavgm",
        "fedadam",
        "feddyn",
        "scaffold",
        "moon",
        "fedcm",
        "fedmlb",
        "fedlc",
        "fedntd",
        "feddecorr",
        "feddc",
        "fedacg",
        "fedagm",
        "fedpaq",
    } <= set(preset_names())
    for name in preset_names():
        Method.build(resolve_method(name, "m"))


def test_defaults_from_the_specification():
    r = {k: resolve_method(k, "m").model_dump() for k in preset_names()}  # the flat form suites write
    assert r["fedadam"]["server"] == {"rule": "adam", "global_lr": 0.01, "beta1": 0.9, "beta2": 0.99, "tau": 1e-3}
    assert r["fedacg"]["server"]["lam"] == 0.85 and r["fedacg"]["client"][0]["mu"] == 1e-2
    assert r["fedagm"]["server"] == {"rule": "agm", "lam": 0.85, "tau": 1.0}
    assert r["fedntd"]["client"][0] == {"term": "ntd", "beta": 0.3, "temperature": 1.0, "ce_weight": "one_minus_beta"}
    assert r["moon"]["client"][0] == {"term": "moon", "mu": 1.0, "tau": 0.5}
    assert r["fedmlb"]["client"][0]["detach_hybrid_target"] is False
    assert r["fedpaq"]["uplink"] == {"codec": "qsgd", "bits": 4, "keep_1d": False}
    assert r["feddc"]["client"][0]["alpha"] == 0.01 and r["fedlc"]["client"][0]["tau"] == 1.0


@pytest.mark.parametrize("base", CLIENT_SIDE)
def test_plus_acg_keeps_client_terms_and_adds_lookahead(base):
    comp = resolve_method(f"{base}+acg", "m")
    assert comp.server.name == "acg"
    assert comp.term_names[: len(preset(base)["client"])] == [t["term"] for t in preset(base)["client"]]
    assert "prox" in comp.term_names
    assert comp.uplink.name == preset(base)["uplink"]["codec"]


def test_plus_paq_quantises_uplink_and_server_side_methods_refuse_acg():
    assert resolve_method("fedacg+paq", "m").uplink.name == "qsgd"
    assert resolve_method("fedpaq+acg", "m").server.name == "acg"
    with pytest.raises(MethodProblems, match="already has server rule"):
        resolve_method("scaffold+acg", "m")


def test_yaml_overrides_and_unknown_parameters():
    comp = resolve_method(
        {
            "preset": "fedmlb+acg",
            "server": {"lam": 0.9},
            "client": {"mlb": {"detach_hybrid_target": True}, "prox": {"mu": 1e-3, "halved": False}},
            "uplink": {"codec": "qsgd", "bits": 2},
        },
        "methods[0]",
    ).model_dump()
    assert comp["server"]["lam"] == 0.9 and comp["uplink"]["bits"] == 2
    assert comp["client"][0]["detach_hybrid_target"] is True and comp["client"][1] == {
        "term": "prox",
        "mu": 1e-3,
        "halved": False,
    }
    with pytest.raises(MethodProblems, match=r"methods\[0\].client\[0\].temp"):
        resolve_method({"preset": "fedntd", "client": {"ntd": {"temp": 2}}}, "methods[0]")
