"""Stale jobs: a finished, diverged or failed job whose code changed since it ran (its summary's
`code_parts` against the code now, run/code_parts.py). `run` trains a stale job again, its old
results set aside to `<job-id>.code-<hash of their code>/`; `--keep-stale` keeps it, marked in
every table (its summary carries `stale`: the parts that changed). A summary written before
per-part fingerprints has unknown code: it is not stale, only counted as such (docs/runs.md)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging

from benchmark.run.code_parts import changed_parts, job_code
from benchmark.store.job_dir import JobDir
from benchmark.store.job_status import FAILED, TERMINAL
from benchmark.store.records import FailedSummary, JobSummary
from benchmark.suite.expand import Job

log = logging.getLogger(__name__)

UNKNOWN = "unknown"  # what `stale_parts` says of a summary that records no parts
JUDGED = (*TERMINAL, FAILED)  # a stopped or unfinished job resumes: its code is the next run's


def stale_parts(job: Job, summary: JobSummary | FailedSummary | None) -> list[str] | str:
    """The parts of `job` whose code changed since `summary` was written ([] when none), or
    UNKNOWN when it records no parts; [] for a job that is not done (nothing to be stale)."""
    if summary is None or summary.status not in JUDGED:
        return []
    changed = changed_parts(summary.code_parts, job_code(job.config))
    return UNKNOWN if changed is None else changed


def is_stale(job: Job, summary: JobSummary | FailedSummary | None) -> bool:
    return stale_parts(job, summary) not in ([], UNKNOWN)


def marked(job: Job, done: JobSummary | None, keep_stale: bool) -> JobSummary | None:
    """A done job's (skipped) summary as a run reuses it: None when its code changed (it runs
    again), or, with `keep_stale`, marked `stale` with the parts that changed."""
    if done is None or not is_stale(job, done):
        return done
    return dataclasses.replace(done, stale=stale_parts(job, done)) if keep_stale else None


def set_aside_stale(job: Job, jobdir: JobDir) -> None:
    """Results of other code move to `<job-id>.code-<hash of their code_parts>/`: kept, never
    reused. Call it holding the job's lock."""
    summary = jobdir.read_summary()
    if not is_stale(job, summary) or summary.status == FAILED:  # a failed job is simply retried
        return
    produced_by = hashlib.sha256(json.dumps(summary.code_parts, sort_keys=True).encode()).hexdigest()[:12]
    aside = jobdir.set_aside(f"code-{produced_by}")
    log.warning(
        "job %s ran on other code (%s changed since): its results moved to %s; running the job again",
        job.id,
        ", ".join(stale_parts(job, summary)),
        aside,
    )


def stale_line(verdicts: list[list[str] | str]) -> str:
    """One line on the stale jobs among `stale_parts` verdicts (and those of unknown code); '' when none."""
    per_part: dict[str, int] = {}
    for parts in verdicts:
        for part in parts if parts != UNKNOWN else ():
            per_part[part] = per_part.get(part, 0) + 1
    stale, unknown = sum(v not in ([], UNKNOWN) for v in verdicts), sum(v == UNKNOWN for v in verdicts)
    said = []
    if stale:
        parts = ", ".join(f"{part} ({n})" for part, n in sorted(per_part.items()))
        said.append(
            f"{stale} job(s) stale: their code changed since they ran: {parts}; `fedbench run` trains them again"
        )
    if unknown:
        said.append(f"{unknown} job(s) ran before fedbench recorded their code: not checked for staleness")
    return "; ".join(said)
