"""A job's config as dotted settings (`local.lr`, `server.lam`, `client_terms.prox.mu`): the names `--set`
takes, the report's "other settings on disk" and MLflow's run params alike."""

from __future__ import annotations


def _item_key(item: dict, index: int, siblings: list) -> str:
    """A list item's key: its component name (client terms by term name), else its position."""
    name = item.get("term") or item.get("rule") or item.get("codec")
    unique = name and sum(1 for s in siblings if name in (s.get("term"), s.get("rule"), s.get("codec"))) == 1
    return str(name) if unique else str(index)


def flatten(obj, prefix: str = "") -> dict[str, str]:
    """Dotted params; None values are left out (MLflow would store the string 'None'); a list of
    plain values reads `a, b, c` (not Python's repr)."""
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}{k}."))
    elif isinstance(obj, list) and obj and all(isinstance(v, dict) for v in obj):
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{prefix}{_item_key(v, i, obj)}."))
    elif isinstance(obj, list):
        out[prefix.rstrip(".")] = ", ".join(map(str, obj))[:6000]
    elif obj is not None:
        out[prefix.rstrip(".")] = str(obj)[:6000]
    return out
