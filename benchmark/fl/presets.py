"""Presets: names for compositions of server rule + client terms + codecs.

A preset is plain data. `X+ACG` composes any client-side preset X with the FedACG server rule
and FedACG's regulariser toward the lookahead point (docs/algorithms.md, "Compositions").
"""

from __future__ import annotations

import copy

from benchmark.fl.registry import PACKAGE, discover
from benchmark.plugins import withdrawable
from benchmark.registry import check_new, import_registering, load_installed, registering_module
from benchmark.suggest import allowed_names, unknown_name

IDENTITY = {"codec": "identity"}

# Filled by the method files themselves (register_preset at their end): a name's read imports its file
# (benchmark/builtin_names.py), or every file of the package (fl.registry.discover), so a new method is one file.
PRESETS: dict[str, dict] = {}
# Modifiers usable after '+': they replace the server rule and/or add terms or codecs.
MODIFIERS: dict[str, dict] = {}
ORIGINS: dict[str, str] = {}  # "preset x" / "modifier x" -> the module that registered it
withdrawable(ORIGINS, lambda key: (MODIFIERS if key.startswith("+") else PRESETS).pop(key.removeprefix("+")))


def register_preset(
    key: str, label: str, server: dict, client: list[dict] | None = None, uplink: dict | None = None
) -> None:
    """Name a composition: `fedbench` suites may then say `methods: [key]` or `key+acg`."""
    check_new("preset", key, ORIGINS, registering_module())
    PRESETS[key] = {
        "label": label,
        "server": server,
        "client": client or [],
        "uplink": uplink or dict(IDENTITY),
        "downlink": dict(IDENTITY),
    }


def register_modifier(key: str, label: str, **parts) -> None:
    """`X+key`: `parts` may hold a `server` (replacing X's `average`), `client` terms to add, an `uplink`."""
    check_new("modifier", "+" + key, ORIGINS, registering_module())
    MODIFIERS[key] = {"label": label, **parts}


def preset_names() -> list[str]:
    """Every registered preset name."""
    discover()
    return sorted(PRESETS)


def _apply_modifier(base: dict, mod: dict) -> dict:
    out = copy.deepcopy(base)
    out["label"] = f"{base['label']}+{mod['label']}"
    if "server" in mod:
        if base["server"]["rule"] != "average":
            raise KeyError(
                f"cannot add a server rule to {base['label']}: it already has server rule {base['server']['rule']!r}"
            )
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
    load_installed()  # the plugins come with any first read, as a registry's
    if base_key not in PRESETS:
        import_registering("preset", base_key, PACKAGE, ORIGINS)
    for key in (k for k in mod_keys if k not in MODIFIERS):
        import_registering("modifier", "+" + key, PACKAGE, ORIGINS)
    if base_key not in PRESETS:
        raise KeyError(unknown_name("preset", base_key, PRESETS))
    out = copy.deepcopy(PRESETS[base_key])
    for key in mod_keys:
        if key not in MODIFIERS:
            raise KeyError(f"unknown modifier '+{key}'; " + allowed_names("+" + key, ["+" + k for k in MODIFIERS]))
        out = _apply_modifier(out, MODIFIERS[key])
    return out
