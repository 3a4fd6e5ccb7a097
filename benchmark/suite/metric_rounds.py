"""A metric at a round its jobs never reach (`acc@1000` with `rounds: 3`) would leave its column
empty without a word: `plan` and `run` warn, naming the metric, where it is written and the rounds.
A warning, not an error: `--rounds 3` on a paper suite (a smoke run) is meant to fall short."""

from __future__ import annotations

import logging

from benchmark.metrics import parse_metric

log = logging.getLogger("fedbench.suite")


def _written_at(suite, metric: str, dataset_index: int) -> str:
    """The YAML key that asks for `metric` in this dataset entry's jobs."""
    entry = suite.datasets[dataset_index]
    if entry.metrics and metric in entry.metrics:
        return f"datasets[{dataset_index}].metrics"
    if entry.reference and metric in entry.reference.metrics:
        return f"datasets[{dataset_index}].reference.metrics"
    return "defaults.metrics"


def warn_metrics_past_the_end(suite, jobs: list) -> None:
    """One warning per metric and YAML key whose round (acc@R, acc_raw@R) is past some jobs' last round."""
    short: dict[tuple[str, str], set[int]] = {}  # (metric, key) -> the rounds of the jobs it is past
    for rounds, metrics, index in {(j.config.rounds, tuple(j.config.metrics), j.dataset_index) for j in jobs}:
        for metric in metrics:
            kind, at = parse_metric(metric)
            if kind != "rounds_to" and at > rounds:
                short.setdefault((metric, _written_at(suite, metric, index)), set()).add(rounds)
    for (metric, key), rounds in short.items():
        last = "/".join(str(r) for r in sorted(rounds))
        log.warning(
            "%s (%s) is past the last round of jobs with rounds: %s; it stays empty for them", metric, key, last
        )
