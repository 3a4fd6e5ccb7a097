"""'Did you mean' for unknown names: every such error lists what is allowed and the closest."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def allowed_names(name: str, allowed: Iterable[str]) -> str:
    """`allowed: a, b, c; did you mean 'b'?` (the suggestion only when one is close)."""
    allowed = sorted(set(allowed))
    close = difflib.get_close_matches(str(name), allowed, n=1, cutoff=0.6)
    if not close:  # case slips (fedavg vs FedAvg) are the commonest typo
        close = [a for a in allowed if a.lower() == str(name).lower()][:1]
    return f"allowed: {', '.join(allowed) or 'none'}" + (f"; did you mean {close[0]!r}?" if close else "")


def unknown_name(kind: str, name: str, allowed: Iterable[str]) -> str:
    """`unknown preset 'x'; allowed: ...`, naming the installed plugins that failed to import (one
    may be what defines it: a suite that uses a broken plugin's names exits naming the plugin)."""
    from benchmark.plugins import broken_note

    return f"unknown {kind} {name!r}; " + allowed_names(name, allowed) + broken_note()
