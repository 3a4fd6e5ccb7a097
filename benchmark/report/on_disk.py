"""The jobs `status` and `report` show: the suite's expanded jobs plus every job on disk that equals
one of them except for its seed (a `run --seeds 0,1,2` of a one-seed suite is reported with n = 3,
not forgotten). `--seeds` narrows to the seeds given; jobs run with `--set`/`--rounds` match only
when the same overrides are given (their settings differ, so their ids do), and `others_on_disk`
counts them so the commands can say they exist."""

from __future__ import annotations

import json
from pathlib import Path

from benchmark.cli_options import load_selected
from benchmark.run.status import TERMINAL


def _seeds_on_disk(suite_dir: Path) -> set[int]:
    """Seeds of the jobs with a result (finished or diverged) under a suite's results folder."""
    seeds = set()
    for summary in suite_dir.glob("*/summary.json"):
        try:
            record = json.loads(summary.read_text())
        except (OSError, ValueError):  # unreadable: JobDir reports it where the job is read
            continue
        if isinstance(record, dict) and record.get("status") in TERMINAL and isinstance(record.get("seed"), int):
            seeds.add(record["seed"])
    return seeds


def _has_result(suite_dir: Path, job_id: str) -> bool:
    try:
        return json.loads((suite_dir / job_id / "summary.json").read_text()).get("status") in TERMINAL
    except (OSError, ValueError, AttributeError):
        return False


def jobs_with_seeds_on_disk(suite_file: Path, results_dir: Path, only=(), sets=(), seeds=None, rounds=None):
    """(suite, jobs): the selection, and without `seeds` also the same jobs at every other seed that
    has a result on disk (appended after the suite's own jobs, in expansion order)."""
    suite, jobs = load_selected(suite_file, only, sets, seeds, rounds)
    if seeds is not None:
        return suite, jobs
    suite_dir = Path(results_dir) / suite.name
    every_seed = {j.config.seed for j in jobs} | _seeds_on_disk(suite_dir)
    if every_seed <= {j.config.seed for j in jobs}:
        return suite, jobs
    _, widened = load_selected(suite_file, only, sets, ",".join(map(str, sorted(every_seed))), rounds)
    known = {j.id for j in jobs}
    extra = [j for j in widened if j.id not in known and _has_result(suite_dir, j.id)]
    return suite, jobs + extra


def others_on_disk(suite_name: str, selected: set[str], results_dir: Path) -> int:
    """Jobs with a result in the suite's folder that the selection leaves out (other --set values,
    --rounds, --seeds, or an earlier version of the suite)."""
    suite_dir = Path(results_dir) / suite_name
    return sum(
        1
        for p in suite_dir.glob("*/summary.json")
        if p.parent.name not in selected and _has_result(suite_dir, p.parent.name)
    )


def left_out_of_previous_report(report_json: Path, selected: set[str], results_dir: Path, suite_name: str) -> int:
    """How many jobs the report now on disk covered (report.json) that this selection leaves out while
    their results are still there: a narrower report is about to replace a fuller one."""
    try:
        previous = json.loads(Path(report_json).read_text()).get("jobs", [])
    except (OSError, ValueError, AttributeError):
        return 0
    suite_dir = Path(results_dir) / suite_name
    return sum(1 for job_id in previous if job_id not in selected and _has_result(suite_dir, str(job_id)))
