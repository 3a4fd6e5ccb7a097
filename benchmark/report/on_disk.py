"""The jobs `status` and `report` show, read through the suite's view `results/<suite>/` (links into the
job store, store/job_store.py): the suite's expanded jobs plus every job on disk that equals
one of them except for its seed (a `run --seeds 0,1,2` of a one-seed suite is reported with n = 3,
not forgotten). `--seeds` narrows to the seeds given; jobs run with `--set`/`--rounds` match only
when the same overrides are given (their settings differ, so their ids do), and `override_groups`
finds the options that would show them, so the commands can say they exist and how to see them."""

from __future__ import annotations

import json
from pathlib import Path

from benchmark.store.job_dir import JobDir
from benchmark.store.job_status import TERMINAL
from benchmark.store.layout import Store, SuiteView
from benchmark.store.old_layout import not_a_job
from benchmark.suite.dotted import flatten


def _job_summaries(suite_dir: Path) -> list[Path]:
    """summary.json of each job the suite's view holds: its links into the store, and its folders of the old
    layout that provably are jobs (a folder of the user's with a summary.json is none)."""
    return [
        p
        for p in suite_dir.glob("*/summary.json")
        if p.parent.is_symlink() or (p.parent.is_dir() and not_a_job(p.parent) is None)
    ]


def _seeds_on_disk(suite_dir: Path) -> set[int]:
    """Seeds of the jobs with a result (finished or diverged) under a suite's results folder."""
    seeds = set()
    for path in _job_summaries(suite_dir):
        summary = _read(path.parent)  # unreadable: JobDir reports it where the job is read
        if summary and summary.status in TERMINAL and isinstance(summary.seed, int):
            seeds.add(summary.seed)
    return seeds


def _read(folder: Path):
    try:
        return JobDir.at(folder).read_summary()
    except OSError:  # a folder, a FIFO, a permission: as unreadable as invalid JSON
        return None


def _has_result(suite_dir: Path, job_id: str) -> bool:
    return (summary := _read(suite_dir / job_id)) is not None and summary.status in TERMINAL


def jobs_with_seeds_on_disk(load, store: Store, seeds: str | None = None):
    """(suite, jobs): `load(seeds)` (the command's selection, seeds as `--seeds` text or None), and
    without `seeds` also the same jobs at every other seed that has a result on disk (appended after
    the suite's own jobs, in expansion order)."""
    suite, jobs = load(seeds)
    suite_dir = store.suite(suite.name).path
    if seeds is not None:
        return suite, jobs
    every_seed = {j.config.seed for j in jobs} | _seeds_on_disk(suite_dir)
    if every_seed <= {j.config.seed for j in jobs}:
        return suite, jobs
    _, widened = load(",".join(map(str, sorted(every_seed))))
    known = {j.id for j in jobs}
    extra = [j for j in widened if j.id not in known and _has_result(suite_dir, j.id)]
    return suite, jobs + extra


def _other_ids(view: SuiteView, selected: set[str]) -> list[str]:
    suite_dir = view.path
    return sorted(
        p.parent.name
        for p in _job_summaries(suite_dir)
        if p.parent.name not in selected and _has_result(suite_dir, p.parent.name)
    )


# config fields that are no setting of the job: labels, bookkeeping, the seed (--seeds), what is not in its id
NOT_SETTINGS = ("job_id", "suite", "seed", "grid_point", "metrics", "checkpoint_every", "checkpoint_minutes")


def _settings(config: dict) -> dict[str, str]:
    flat = flatten({k: v for k, v in config.items() if k not in NOT_SETTINGS})
    return {k: v for k, v in flat.items() if not k.endswith("label") and not k.startswith("dataset.reference")}


def override_groups(view: SuiteView, jobs: list) -> dict[tuple[str, ...], list[str]]:
    """The jobs on disk outside `jobs`, grouped by the --set options that would select them: each
    job's settings compared with the selected job of the same dataset and method (() where none is
    the same dataset and method, e.g. a job of an earlier version of the suite)."""
    suite_dir = view.path
    like = {(j.dataset_label, j.method_label): j for j in jobs}
    reference: dict[str, dict] = {}
    groups: dict[tuple[str, ...], list[str]] = {}
    for job_id in _other_ids(view, {j.id for j in jobs}):
        try:
            config = json.loads((suite_dir / job_id / "config.json").read_text())
            key = (config["dataset"]["label"] or config["dataset"]["name"], config["method"]["label"])
        except (OSError, ValueError, KeyError, TypeError):
            groups.setdefault((), []).append(job_id)
            continue
        twin = like.get(key)
        if twin is None:
            groups.setdefault((), []).append(job_id)
            continue
        if twin.id not in reference:
            reference[twin.id] = _settings(json.loads(json.dumps(twin.config.model_dump(mode="json"))))
        mine, theirs = _settings(config), reference[twin.id]
        sets = tuple(sorted(f"{k}={mine[k]}" for k in mine if mine[k] != theirs.get(k)))
        groups.setdefault(sets, []).append(job_id)
    return groups


def options_text(sets: tuple[str, ...]) -> str:
    """`--rounds 10 --set local.lr=0.1` for a group of override_groups."""
    return " ".join(f"--rounds {s.split('=', 1)[1]}" if s.startswith("rounds=") else f"--set {s}" for s in sets)


def left_out_of_previous_report(report_json: Path, selected: set[str], view: SuiteView) -> int:
    """How many jobs the report now on disk covered (report.json) that this selection leaves out while
    their results are still there: a narrower report is about to replace a fuller one."""
    try:
        previous = json.loads(Path(report_json).read_text()).get("jobs", [])
    except (OSError, ValueError, AttributeError):
        return 0
    suite_dir = view.path
    return sum(1 for job_id in previous if job_id not in selected and _has_result(suite_dir, str(job_id)))
