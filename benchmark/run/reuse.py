"""Whether `fedbench check --reuse` may reuse a job's results: decided from the code now, never on
the word of the summary alone. A fingerprint written in summary.json is a claim anyone can edit;
so besides the recorded fingerprints (fedbench's, and each part's: run/code_parts.py) having to be
the current code's, the job's first evaluated round is computed again with the current code and
must equal the stored one, value for value. A result another code produced (a broken build whose
summary was edited, results copied in from elsewhere) differs there and is not reused."""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchmark.run.code_fingerprint import code_fingerprint
from benchmark.run.job_status import TERMINAL
from benchmark.run.records import MEASURED
from benchmark.run.results import JobDir
from benchmark.run.stale import UNKNOWN, stale_parts
from benchmark.suite.expand import Job


def why_not_reusable(job: Job, jobdir: JobDir, suite: str, device: str) -> str | None:
    """None when the current code reproduces the job's stored results, else why not."""
    summary = jobdir.read_summary() or {}
    if summary.get("status") not in TERMINAL or not jobdir.is_done():
        return "it is not done (a gate runs it whole)"
    if (produced_by := summary.get("code_fingerprint")) != (current := code_fingerprint()):
        return f"results of other code ({produced_by}, now {current})"
    if (changed := stale_parts(job, summary)) == UNKNOWN:
        return "its summary records no per-part code fingerprints"
    if changed:
        return f"the code of {', '.join(changed)} changed since it ran"
    stored = jobdir.read_metrics()
    if not stored:
        return "it has no metrics to check against"
    again = first_round_now(job, suite, stored[0]["round"], device)
    if differing := [k for k in MEASURED if again.get(k) != stored[0].get(k)]:
        return f"round {stored[0]['round']} computed by the current code differs from the stored one ({', '.join(differing)})"
    return None


def first_round_now(job: Job, suite: str, upto: int, device: str) -> dict:
    """The metrics record of round `upto` as the current code computes it (in a scratch folder)."""
    from benchmark.run.job_runner import run_job
    from benchmark.run.protocols import claiming

    claimed = claiming(job.config)
    replay = (lambda j: claimed[0].run_batch([j])[0]) if claimed else None
    with tempfile.TemporaryDirectory(prefix="fedbench-reuse-") as scratch:
        scratch_dir = JobDir.at(Path(scratch) / job.id)
        run_job(job, suite, scratch_dir, device, stop_after=upto, simulation_for=replay)
        return next((r for r in scratch_dir.read_metrics() if r["round"] == upto), {})
