"""The regression gate behind `fedbench check`: a suite's results against a curated baseline.

The baseline (results/baselines/<suite>.json) holds each seed's values:
{"<dataset> / <method> / seed <s>": {metric: value}}, at least MIN_SEEDS seeds per (dataset,
method). It is keyed by labels, not job ids, so a change of defaults that alters ids is still
compared, and `--set`/`--seeds` runs are compared with the suite's baseline.

The test, per (dataset, method) and metric: the mean over the seeds run now against the
baseline's mean, with Welch's t-test, two-sided (a reference implementation that changes its
numbers either way has changed): the tolerance is the (1 - ALPHA) quantile of Student's t with
Welch-Satterthwaite degrees of freedom times the standard error of the difference of the means,
sqrt(s_b²/n_b + s_n²/n_n), on each side, bounded by the same test on the baseline's spread alone
(tolerance()), and never less than the metric's FLOOR (cross-machine
float noise; one round for rounds_to, whose tolerance is rounded up to whole rounds). A change
beyond the tolerance for the better is "improved" and fails too unless improvements are allowed
(one-sided). A floor given by the user is at most MAX_FLOOR: above the seeds' spread, a larger one
only blinds the gate. Different seeds than the baseline's ("a reshuffle") are another sample of
the same distribution, which the test allows for.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import shutil
import statistics
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from benchmark.errors import UserError
from benchmark.metrics import is_metric
from benchmark.store.job_dir import JobDir, atomic_write_json, check_writable
from benchmark.store.job_store import job_lock, open_results
from benchmark.store.layout import Store
from benchmark.store.records import NO_SUMMARY, FailedSummary, JobSummary, measured, summary_from_json

log = logging.getLogger(__name__)

MIN_SEEDS = 3
ALPHA = 0.01  # per side and comparison (docs/runs.md: "The regression gate")
FLOOR = {"acc": 0.5, "rounds": 1.0}  # accuracy points / rounds
# --tolerance's ceiling (points / rounds): the floor stands for float noise between machines, which moves
# suites/ci.yaml's numbers by hundredths; 5 points is 3x what halving its learning rate costs.
MAX_FLOOR = 5.0
REGRESSION, IMPROVED, WITHIN = "regression", "improved", "within tolerance"
SEP = " / seed "


def key(summary: JobSummary | FailedSummary) -> str:
    return f"{group(summary)}{SEP}{summary.seed}"


def group(summary: JobSummary | FailedSummary) -> str:
    return f"{summary.dataset} / {summary.method}"


def group_of_job(job) -> str:
    return f"{job.dataset_label} / {job.method_label}"


def higher_is_better(metric: str) -> bool:
    return not metric.startswith("rounds_to")


def comparable(summary: JobSummary | FailedSummary) -> dict:
    ran = measured(summary)
    values = {"final_acc": ran.final_acc, "final_ema_acc": ran.final_ema_acc}
    values.update({k: v for k, v in ran.metrics.items() if not k.startswith("bytes_to")})
    return values


def as_number(value) -> float | None:
    """A metric's value as a number: rounds_to's ">R" (not reached within R rounds) counts as R + 1."""
    if isinstance(value, str) and value.startswith(">") and value[1:].isdigit():
        return int(value[1:]) + 1.0
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


# ---------------------------------------------------------------- baseline file


def write_baseline(path: Path, summaries: list[Mapping]) -> None:
    """Every seed's values; refused unless every job finished and each (dataset, method) has MIN_SEEDS seeds."""
    summaries = [summary_from_json(s) for s in summaries]  # as `run` hands them back: typed here
    unfinished = [key(s) for s in summaries if s.status != "finished"]
    if unfinished:
        raise UserError(f"not writing a baseline from jobs that did not finish: {', '.join(unfinished)}")
    seeds: dict[str, set] = {}
    for s in summaries:
        seeds.setdefault(group(s), set()).add(s.seed)
    short = [g for g, ss in seeds.items() if len(ss) < MIN_SEEDS]
    if short:
        raise UserError(f"a baseline needs at least {MIN_SEEDS} seeds per method; {', '.join(short)} have fewer")
    atomic_write_json(path, {key(s): comparable(s) for s in summaries})


def load_baseline(path: Path) -> dict[str, dict[str, list[float]]]:
    """group -> metric -> the seeds' values; UserError (exit 2) for anything the gate cannot trust."""
    if not path.is_file():
        raise UserError(f"no baseline at {path}; create it with `fedbench check SUITE --update`")
    try:
        raw = json.loads(path.read_text())
    except (ValueError, OSError) as err:
        raise UserError(f"{path}: not a baseline file ({err})") from None
    if not isinstance(raw, dict):
        raise UserError(
            f"{path}: a JSON {type(raw).__name__}, not a baseline (an object of "
            "'<dataset> / <method> / seed <n>': {metric: value}); regenerate it with `fedbench check SUITE --update`"
        )
    if not raw:
        raise UserError(
            f"{path}: an empty baseline compares nothing; regenerate it with `fedbench check SUITE --update`"
        )
    groups: dict[str, dict[str, list[float]]] = {}
    metrics_of: dict[str, dict[str, set]] = {}  # group -> seed key -> its metrics
    for k, values in raw.items():
        name, sep, seed = k.rpartition(SEP)
        if not sep or not seed.isdigit() or not isinstance(values, dict) or not values:
            raise UserError(f"{path}: entry {k!r} is not '<dataset> / <method> / seed <n>' with metric values")
        for metric, value in values.items():
            problem = value_problem(metric, value)
            if problem:
                raise UserError(f"{path}: {k}: {metric} = {value!r} {problem}; regenerate it with --update")
            groups.setdefault(name, {}).setdefault(metric, []).append(as_number(value))
        metrics_of.setdefault(name, {})[k] = set(values)
    for name, metrics in groups.items():
        every = set(metrics)
        for k, has in metrics_of[name].items():
            lacking = sorted(every - has) + sorted(REQUIRED - every)
            if lacking:
                raise UserError(f"{path}: {k} lacks {', '.join(lacking)}; regenerate it with --update")
        zero = [m for m, v in metrics.items() if is_accuracy(m) and not any(v)]
        if zero:
            raise UserError(
                f"{path}: {name}: {', '.join(zero)} is 0 for every seed (a model that never predicts a class "
                "right: a broken run, not a baseline); regenerate it with --update"
            )
        n = len(metrics_of[name])
        if n < MIN_SEEDS:
            raise UserError(
                f"{path}: {name} has {n} seed(s); the gate compares means over at least "
                f"{MIN_SEEDS} seeds: regenerate it with `fedbench check SUITE --update --seeds 0,1,2`"
            )
    return groups


REQUIRED = {"final_acc", "final_ema_acc"}  # every summary has them


def is_accuracy(metric: str) -> bool:
    return metric in REQUIRED or metric.startswith(("acc@", "acc_raw@"))


def value_problem(metric: str, value) -> str | None:
    """Why a baseline value cannot be one of `metric` (None: it can)."""
    if not (metric in REQUIRED or is_metric(metric)):
        return "is not a metric the gate compares (final_acc, final_ema_acc, acc@R, acc_raw@R, rounds_to@X)"
    number = as_number(value)
    if number is None:
        return "is not a finite number"
    if is_accuracy(metric) and not 0 <= number <= 100:
        return "is not an accuracy in [0, 100]"
    if not is_accuracy(metric) and (number < 0 or number != int(number)):
        return "is not a whole number of rounds"
    return None


def check_matches(baseline: dict, selected: set[str], in_suite: set[str], path: Path) -> None:
    """Exit 2 unless every selected (dataset, method) is in the baseline and every baseline entry
    is in the suite (a narrower `--only` selection compares a subset; a stale entry is an error)."""
    lacking = sorted(selected - set(baseline))
    stale = sorted(set(baseline) - in_suite)
    if lacking or stale:
        parts = [f"the baseline lacks {', '.join(lacking)}"] if lacking else []
        parts += [f"the suite has no {', '.join(stale)}"] if stale else []
        raise UserError(
            f"{path} does not match the suite: {'; '.join(parts)}. Regenerate it deliberately with "
            "`fedbench check SUITE --update`"
        )


# ---------------------------------------------------------------- the comparison


@dataclass
class Row:
    group: str
    metric: str
    baseline: float | None  # mean over the baseline's seeds
    now: float | None  # mean over the seeds run now
    delta: float | None  # now - baseline
    tolerance: float | None
    verdict: str
    n_baseline: int
    n_now: int

    def failed(self, allow_improvements: bool) -> bool:
        return self.verdict != WITHIN and not (allow_improvements and self.verdict == IMPROVED)


def tolerance(metric: str, base: list[float], now: list[float], floor: float | None = None) -> float:
    """max(floor, the smaller of two 1 - ALPHA quantiles of Student's t times a standard error of the
    difference of the means: Welch's (both samples' variances) and the baseline's seeds' alone
    (s_b·sqrt(1/n_b + 1/n_n), n_b - 1 degrees of freedom)). The second bounds the tolerance by the
    spread the baseline shows: a change that scatters the seeds now cannot widen it to pass a shift.
    Each is a test at level ALPHA per side, so the pair fails unchanged code at most 2·ALPHA per side."""
    from scipy.stats import t

    rounds = not higher_is_better(metric)
    floor = FLOOR["rounds" if rounds else "acc"] if floor is None else floor
    vb, vn = statistics.variance(base) / len(base), statistics.variance(now) / len(now)
    se = math.sqrt(vb + vn)
    allowed = floor
    if se > 0:
        df = se**4 / (vb**2 / (len(base) - 1) + vn**2 / (len(now) - 1))
        welch = float(t.ppf(1 - ALPHA, df)) * se
        by_baseline = (
            float(t.ppf(1 - ALPHA, len(base) - 1))
            * math.sqrt(statistics.variance(base))
            * math.sqrt(1 / len(base) + 1 / len(now))
        )
        allowed = max(floor, min(welch, by_baseline))
    return float(math.ceil(allowed)) if rounds else allowed


def check_floor(floor: float | None) -> None:
    """A user's floor above MAX_FLOOR is refused: it would pass changes the seeds' spread can tell apart."""
    if floor is not None and floor > MAX_FLOOR:
        raise UserError(
            f"--tolerance {floor:g} is above {MAX_FLOOR:g}, the most the gate allows: it is a floor for float "
            f"noise between machines (default {FLOOR['acc']:g} points / {FLOOR['rounds']:g} round); above it the "
            'tolerance comes from the seeds\' spread (docs/runs.md, "The regression gate")'
        )


def compare(baseline: dict, summaries: list[Mapping], floor: float | None = None) -> list[Row]:
    """A row per (dataset, method) of `summaries` and metric of its baseline."""
    by_group: dict[str, list[JobSummary | FailedSummary]] = {}
    for s in map(summary_from_json, summaries):  # as `run` hands them back: typed here
        by_group.setdefault(group(s), []).append(s)
    rows = []
    for name, runs in by_group.items():
        bad = sorted({s.status or "missing" for s in runs} - {"finished"})
        if bad:
            rows.append(Row(name, "status", None, None, None, None, "/".join(bad), 0, len(runs)))
            continue
        for metric, base in baseline[name].items():
            now = [as_number(comparable(s).get(metric)) for s in runs]
            if any(v is None for v in now):
                rows.append(Row(name, metric, statistics.mean(base), None, None, None, "missing", len(base), 0))
                continue
            allowed = tolerance(metric, base, now, floor)
            delta = statistics.mean(now) - statistics.mean(base)
            better = delta if higher_is_better(metric) else -delta
            verdict = REGRESSION if better < -allowed else IMPROVED if better > allowed else WITHIN
            rows.append(
                Row(
                    name,
                    metric,
                    statistics.mean(base),
                    statistics.mean(now),
                    delta,
                    allowed,
                    verdict,
                    len(base),
                    len(now),
                )
            )
    return rows


def summary_line(rows: list[Row], allow_improvements: bool) -> str:
    """e.g. "1 regression, 2 improved (failing: the gate is two-sided), 17 within tolerance"."""
    regressions = sum(r.verdict not in (WITHIN, IMPROVED) for r in rows)
    improved = sum(r.verdict == IMPROVED for r in rows)
    within = sum(r.verdict == WITHIN for r in rows)
    parts = [f"{regressions} regression{'s' * (regressions != 1)}"]
    if improved:
        why = "passing: --allow-improvements" if allow_improvements else "failing: the gate is two-sided"
        parts.append(f"{improved} improved ({why})")
    return ", ".join(parts + [f"{within} within tolerance"])


# ---------------------------------------------------------------- what the gate runs


def check_seeds(jobs) -> None:
    """At least MIN_SEEDS seeds per (dataset, method), and one setting per seed (no suite grid)."""
    seeds: dict[str, list[int]] = {}
    for j in jobs:
        seeds.setdefault(group_of_job(j), []).append(j.config.seed)
    for name, ss in seeds.items():
        if len(set(ss)) < MIN_SEEDS:
            raise UserError(
                f"{name}: {len(set(ss))} seed(s); the gate compares means over at least {MIN_SEEDS} seeds: "
                f"set the suite's defaults.seeds or pass --seeds 0,1,2"
            )
        if len(set(ss)) < len(ss):
            raise UserError(
                f"{name}: several settings per seed (a suite grid); the gate compares one setting per method"
            )


@contextlib.contextmanager
def check_folder(store: Store | None, reuse: bool, suite: str, jobs):
    """The results folder the gate runs in: a new temporary one (a scratch Store, removed afterwards), or
    `store` (--results-dir), where jobs already present are an error unless `reuse`; then a job is reused
    only if the current code reproduces it (run/reuse.py), else set aside to `<job-id>.code-<fingerprint>/`."""
    if store is None:
        if reuse:
            raise UserError("--reuse reuses the jobs of --results-dir: give the folder")
        folder = Path(tempfile.mkdtemp(prefix="fedbench-check-"))
        try:
            yield Store(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    check_writable(open_results(store, suite))
    from benchmark.run.executor_base import torch_device
    from benchmark.run.reuse import ReuseCheck

    verdicts = ReuseCheck(jobs, suite, torch_device("auto"))
    for job in jobs:
        jobdir = JobDir(store, job.id)
        if not jobdir.path.exists():
            continue
        if not reuse:
            raise UserError(
                f"{jobdir.path} exists: check runs every job afresh; pass --reuse to reuse the jobs the "
                "current code produced, or give another --results-dir"
            )
        with job_lock(store, job.id):
            if why := verdicts.why_not(job, jobdir):
                produced_by = (jobdir.read_summary() or NO_SUMMARY).code_fingerprint
                aside = jobdir.set_aside(f"code-{produced_by or 'unknown'}")
                log.warning("job %s not reused: %s; moved to %s, it runs again", job.id, why, aside)
    yield store
