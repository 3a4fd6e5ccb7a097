"""Laying settings over settings: a dataset entry's over `defaults:`, an extending suite's over its
parent's (suite/extends.py)."""

from __future__ import annotations

import copy


def deep_merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def merge_local(base: dict, over: dict) -> dict:
    """Local-training settings `over` laid over `base`; giving one budget (epochs or steps)
    drops the other, so a table's `steps: 70` replaces the default `epochs: 5`."""
    out = deep_merge(base, over)
    for budget, other in (("steps", "epochs"), ("epochs", "steps")):
        if over.get(budget) is not None and other not in over:
            out[other] = None
    return out
