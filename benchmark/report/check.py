"""Regression check: compare a suite's summaries with a curated baseline file.

Baselines are keyed by (dataset label, method label, seed), not by job id, so a change of
defaults that alters ids is still compared (and shows up as a regression if numbers move).

Tolerances: one number for every metric (`--tolerance`), or per metric from the seed-to-seed
spread measured when the baseline was written (`--update --spread-seeds 0,1,2,3,4`), recorded
beside the baseline in `<suite>.tolerance.json` with the values it came from. A change that only
reshuffles randomness moves a result like another seed would; a tolerance of K standard
deviations of that spread lets such changes pass and catches a broken method.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from benchmark.errors import UserError
from benchmark.run.results import atomic_write_json

SPREAD_K = 3.0  # tolerance = K x the largest seed-to-seed standard deviation over the suite's methods
SPREAD_FLOOR = 0.5  # never tighter than this (accuracy points or rounds): cross-machine float noise


def key(summary: dict) -> str:
    return f"{summary['dataset']} / {summary['method']} / seed {summary['seed']}"


def group(summary: dict) -> str:
    return f"{summary['dataset']} / {summary['method']}"


def tolerance_path(baseline: Path) -> Path:
    return baseline.with_name(baseline.stem + ".tolerance.json")


@dataclass
class Finding:
    key: str
    metric: str
    baseline: object
    measured: object
    tolerance: float | None = None

    def __str__(self) -> str:
        within = f", tolerance {self.tolerance:g}" if self.tolerance is not None else ""
        return f"{self.key}: {self.metric} = {self.measured} (baseline {self.baseline}{within})"


def comparable(summary: dict) -> dict:
    values = {"final_acc": summary.get("final_acc"), "final_ema_acc": summary.get("final_ema_acc")}
    values.update({k: v for k, v in summary.get("metrics", {}).items() if not k.startswith("bytes_to")})
    return values


def write_baseline(path: Path, summaries: list[dict]) -> None:
    atomic_write_json(path, {key(s): comparable(s) for s in summaries if s.get("status") == "finished"})


def spread_tolerances(summaries: list[dict]) -> dict:
    """Per metric: K x the largest standard deviation over seeds of any method (at least the floor)."""
    values: dict[str, dict[str, list]] = {}
    for s in summaries:
        if s.get("status") == "finished":
            for metric, v in comparable(s).items():
                if isinstance(v, (int, float)):
                    values.setdefault(group(s), {}).setdefault(metric, []).append(v)
    stds = {g: {m: statistics.stdev(vs) for m, vs in ms.items() if len(vs) >= 2} for g, ms in values.items()}
    metrics = {m for ms in stds.values() for m in ms}
    if not metrics:
        raise UserError("measuring the seed spread needs at least two finished seeds per method")
    tolerance = {
        m: max(SPREAD_FLOOR, math.ceil(SPREAD_K * max(g[m] for g in stds.values() if m in g) * 100) / 100)
        for m in sorted(metrics)
    }
    return {
        "rule": f"tolerance = max({SPREAD_FLOOR}, {SPREAD_K:g} x the largest seed-to-seed standard deviation "
        "over the suite's methods)",
        "seeds": sorted({s["seed"] for s in summaries if s.get("status") == "finished"}),
        "tolerance": tolerance,
        "std": stds,
        "values": values,
    }


def load_tolerances(baseline: Path) -> dict[str, float] | None:
    path = tolerance_path(baseline)
    if not path.exists():
        return None
    try:
        return {m: float(t) for m, t in json.loads(path.read_text())["tolerance"].items()}
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as err:
        raise UserError(
            f"{path}: not a tolerance file ({type(err).__name__}: {err}); rewrite it with "
            "`fedbench check SUITE --update --spread-seeds 0,1,2,3,4`"
        ) from None


def compare(path: Path, summaries: list[dict], tolerance: float | dict[str, float]) -> list[Finding]:
    """Findings where a metric moved by more than its tolerance (accuracy points / rounds), or is missing."""
    if not path.exists():
        raise UserError(f"no baseline at {path}; create it with `fedbench check SUITE --update`")
    baseline = json.loads(path.read_text())
    measured = {key(s): s for s in summaries}
    findings = []
    for k, expected in baseline.items():
        if k not in measured or measured[k].get("status") != "finished":
            findings.append(Finding(k, "status", "finished", measured.get(k, {}).get("status", "missing")))
            continue
        got = comparable(measured[k])
        for metric, want in expected.items():
            have = got.get(metric)
            allowed = tolerance.get(metric, SPREAD_FLOOR) if isinstance(tolerance, dict) else tolerance
            numeric = isinstance(want, (int, float)) and isinstance(have, (int, float))
            if (numeric and abs(have - want) > allowed) or (not numeric and have != want):
                findings.append(Finding(k, metric, want, have, allowed if numeric else None))
    return findings
