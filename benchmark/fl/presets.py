"""Presets: names for compositions of server rule + client terms + codecs.

A preset is plain data. `X+ACG` composes any client-side preset X with the FedACG server rule
and FedACG's regulariser toward the lookahead point (ALGORITHMS.md, "Composed variants").
"""

from __future__ import annotations

import copy

from benchmark.suggest import allowed_names

IDENTITY = {"codec": "identity"}


def _preset(label: str, server: dict, client: list[dict] | None = None, uplink: dict | None = None) -> dict:
    return {
        "label": label,
        "server": server,
        "client": client or [],
        "uplink": uplink or dict(IDENTITY),
        "downlink": dict(IDENTITY),
    }


QSGD = {"codec": "qsgd", "bits": 4}
ACG_PROX = {"term": "prox", "mu": 1e-2}  # FedACG's regulariser toward the lookahead (paper's best β)

PRESETS: dict[str, dict] = {
    "fedavg": _preset("FedAvg", {"rule": "average"}),
    "fedprox": _preset("FedProx", {"rule": "average"}, [{"term": "prox", "mu": 1e-3}]),
    "fedavgm": _preset("FedAvgM", {"rule": "momentum", "beta": 0.4}),
    "fedadam": _preset("FedAdam", {"rule": "adam"}),
    "feddyn": _preset("FedDyn", {"rule": "dyn", "alpha": 1e-2}, [{"term": "dyn", "alpha": 1e-2}]),
    "scaffold": _preset("SCAFFOLD", {"rule": "scaffold"}, [{"term": "scaffold"}]),
    "moon": _preset("MOON", {"rule": "average"}, [{"term": "moon", "mu": 1.0, "tau": 0.5}]),
    "fedcm": _preset("FedCM", {"rule": "fedcm"}, [{"term": "fedcm", "alpha": 0.1}]),
    "fedmlb": _preset("FedMLB", {"rule": "average"}, [{"term": "mlb"}]),
    "fedlc": _preset("FedLC", {"rule": "average"}, [{"term": "lc", "tau": 1.0}]),
    "fedntd": _preset("FedNTD", {"rule": "average"}, [{"term": "ntd", "beta": 0.3, "temperature": 1.0}]),
    "feddecorr": _preset("FedDecorr", {"rule": "average"}, [{"term": "decorr", "beta": 0.01}]),
    "feddc": _preset("FedDC", {"rule": "feddc"}, [{"term": "feddc", "alpha": 1e-2}]),
    "fedacg": _preset("FedACG", {"rule": "acg", "lam": 0.85}, [dict(ACG_PROX)]),
    "fedagm": _preset(
        "FedAGM", {"rule": "agm", "lam": 0.85, "tau": 1.0}, [{"term": "ce_scale", "alpha": 1.0}, {"term": "prox", "mu": 1e-3}]
    ),
    "fedpaq": _preset("FedPAQ", {"rule": "average"}, uplink=dict(QSGD)),
    # FedAc (convex, all workers): μ defaults to local.weight_decay λ. The minibatch baselines take
    # one step per round on the round's K batches together (the `minibatch` term, docs/methods.md).
    "fedac1": _preset("FedAc-I", {"rule": "fedac"}, [{"term": "fedac", "variant": "I"}]),
    "fedac2": _preset("FedAc-II", {"rule": "fedac"}, [{"term": "fedac", "variant": "II"}]),
    "fedac_vanilla": _preset("FedAc (vanilla)", {"rule": "fedac"}, [{"term": "fedac", "variant": "vanilla"}]),
    "mbsgd": _preset("MB-SGD", {"rule": "average"}, [{"term": "minibatch"}]),
    "mbacsgd": _preset("MB-AC-SGD", {"rule": "fedac"}, [{"term": "fedac", "variant": "vanilla"}, {"term": "minibatch"}]),
}

# Modifiers usable after '+': they replace the server rule and/or add terms or codecs.
MODIFIERS: dict[str, dict] = {
    "acg": {"label": "ACG", "server": {"rule": "acg", "lam": 0.85}, "client": [dict(ACG_PROX)]},
    "paq": {"label": "PAQ", "uplink": dict(QSGD)},
}


def register_preset(key: str, preset: dict) -> None:
    if key in PRESETS:
        raise ValueError(f"preset {key!r} registered twice")
    PRESETS[key] = preset


def register_modifier(key: str, modifier: dict) -> None:
    if key in MODIFIERS:
        raise ValueError(f"modifier {key!r} registered twice")
    MODIFIERS[key] = modifier


def _apply_modifier(base: dict, mod: dict) -> dict:
    out = copy.deepcopy(base)
    out["label"] = f"{base['label']}+{mod['label']}"
    if "server" in mod:
        if base["server"]["rule"] != "average":
            raise KeyError(f"cannot add a server rule to {base['label']}: it already has server rule {base['server']['rule']!r}")
        out["server"] = copy.deepcopy(mod["server"])
    present = {t["term"] for t in out["client"]}
    out["client"] += [copy.deepcopy(t) for t in mod.get("client", []) if t["term"] not in present]
    for link in ("uplink", "downlink"):
        if link in mod:
            out[link] = copy.deepcopy(mod[link])
    return out


def preset(name: str) -> dict:
    """The composition a preset name stands for (a fresh copy). Raises KeyError with the choices."""
    base_key, *mod_keys = name.lower().split("+")
    if base_key not in PRESETS:
        raise KeyError(f"unknown preset {base_key!r}; " + allowed_names(base_key, PRESETS))
    out = copy.deepcopy(PRESETS[base_key])
    for key in mod_keys:
        if key not in MODIFIERS:
            raise KeyError(f"unknown modifier '+{key}'; " + allowed_names("+" + key, ["+" + k for k in MODIFIERS]))
        out = _apply_modifier(out, MODIFIERS[key])
    return out
