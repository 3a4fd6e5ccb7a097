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
