"""The papers' metrics: EMA-0.9 smoothed accuracy, acc@R, rounds_to@X, cost to reach X.

The metric grammar lives here: `acc@R` (smoothed accuracy at round R, the FedACG/FedAGM
tables), `acc_raw@R` (the unsmoothed test accuracy at round R, FedCM's tables) and
`rounds_to@X` (first round whose smoothed accuracy is ≥ X).

The running average starts at the first evaluated accuracy (a_s(t0) = a(t0)), then
a_s(t) = 0.9·a_s(t−1) + 0.1·a(t) over evaluated rounds.
"""

from __future__ import annotations

import re

EMA_DECAY = 0.9


CLIENT_PERCENTILES = (10, 25, 50, 75, 90)


def client_spread(accuracies: list[float]) -> dict:
    """Per-client accuracies summarised as federated papers report them: the percentiles
    CLIENT_PERCENTILES (numpy's linear interpolation between the sorted values), the unweighted
    mean over clients and their number."""
    import numpy as np

    values = np.asarray(accuracies, dtype=float)
    spread = {f"p{q}": float(v) for q, v in zip(CLIENT_PERCENTILES, np.percentile(values, CLIENT_PERCENTILES))}
    return {**spread, "mean": float(values.mean()), "clients": len(values)}


def ema_update(previous: float | None, value: float, decay: float = EMA_DECAY) -> float:
    return value if previous is None else decay * previous + (1 - decay) * value


METRIC_RE = re.compile(r"(acc|acc_raw)@(\d+)|(rounds_to)@(\d+(?:\.\d+)?)")
METRIC_GRAMMAR = "acc@R, acc_raw@R or rounds_to@X"


def is_metric(name: str) -> bool:
    return METRIC_RE.fullmatch(name) is not None


def parse_metric(name: str) -> tuple[str, float]:
    """('acc' | 'acc_raw' | 'rounds_to', R or X); ValueError naming the grammar otherwise."""
    m = METRIC_RE.fullmatch(name)
    if not m:
        raise ValueError(f"metric {name!r} is not {METRIC_GRAMMAR}")
    return (m.group(1), float(m.group(2))) if m.group(1) else (m.group(3), float(m.group(4)))


def acc_at(records: list[dict], r: int, key: str = "ema_acc") -> float | None:
    """Accuracy (smoothed by default, `key="test_acc"` raw) at round r (1-based: after r rounds);
    None if r was not reached."""
    last = None
    for rec in records:
        if rec["round"] <= r:
            last = rec[key]
    if not records or records[-1]["round"] < r:
        return None
    return last


def rounds_to(records: list[dict], target: float) -> int | None:
    """First (1-based) round whose smoothed accuracy is ≥ target; None if never."""
    for rec in records:
        if rec["ema_acc"] >= target:
            return rec["round"]
    return None


def evaluated_round(r: int, rounds: int, eval_every: int, metrics: list[str]) -> bool:
    """Whether round r (1-based) is evaluated. The smoothed metrics (acc@R, rounds_to@X) and a job
    naming none (its curves, final EMA) need every eval_every-th round; a job whose metrics are all
    acc_raw@R needs only those rounds. The last round always is (final accuracy, final model)."""
    if r == rounds:
        return True
    parsed = [parse_metric(m) for m in metrics]
    if parsed and all(kind == "acc_raw" for kind, _ in parsed):
        return any(r == int(at) for _, at in parsed)
    return r % eval_every == 0


def summarise(records: list[dict], metrics: list[str], rounds: int) -> dict:
    """Values of acc@R / acc_raw@R / rounds_to@X (">R" when not reached) and bytes to reach each target."""
    out: dict = {}
    for name in metrics:
        kind, value = parse_metric(name)
        if kind == "acc":
            out[name] = acc_at(records, int(value))
        elif kind == "acc_raw":
            out[name] = acc_at(records, int(value), key="test_acc")
        else:
            hit = rounds_to(records, value)
            out[name] = hit if hit is not None else f">{rounds}"
            rec = next((r for r in records if r["round"] == hit), None)
            out[f"bytes_to@{name.split('@')[1]}"] = (rec["bytes_down"] + rec["bytes_up"]) if rec else None
    return out
