"""Regression check: compare a suite's summaries with a curated baseline file.

Baselines are keyed by (dataset label, method label, seed), not by job id, so a change of
defaults that alters ids is still compared (and shows up as a regression if numbers move).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from benchmark.errors import UserError
from benchmark.run.results import atomic_write_json


def key(summary: dict) -> str:
    return f"{summary['dataset']} / {summary['method']} / seed {summary['seed']}"


@dataclass
class Finding:
    key: str
    metric: str
    baseline: object
    measured: object

    def __str__(self) -> str:
        return f"{self.key}: {self.metric} = {self.measured} (baseline {self.baseline})"


def comparable(summary: dict) -> dict:
    values = {"final_acc": summary.get("final_acc"), "final_ema_acc": summary.get("final_ema_acc")}
    values.update({k: v for k, v in summary.get("metrics", {}).items() if not k.startswith("bytes_to")})
    return values


def write_baseline(path: Path, summaries: list[dict]) -> None:
    atomic_write_json(path, {key(s): comparable(s) for s in summaries if s.get("status") == "finished"})


def compare(path: Path, summaries: list[dict], tolerance: float) -> list[Finding]:
    """Findings where a metric moved by more than `tolerance` (accuracy points / rounds), or is missing."""
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
            numeric = isinstance(want, (int, float)) and isinstance(have, (int, float))
            if (numeric and abs(have - want) > tolerance) or (not numeric and have != want):
                findings.append(Finding(k, metric, want, have))
    return findings
