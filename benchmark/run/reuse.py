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
from benchmark.run.stale import UNKNOWN, stale_parts
from benchmark.store.job_dir import JobDir
from benchmark.store.job_status import TERMINAL
from benchmark.store.records import MEASURED, RoundRecord
from benchmark.suite.expand import Job


class ReuseCheck:
    """The gate's verdicts on the jobs of one check: `why_not(job, jobdir)` is None when the current
    code reproduces the job's stored results, else why not. A protocol's jobs (FedAc's) are
    recomputed in the batches a run of all `jobs` computes them in: a batch of another size rounds
    differently in the last bits."""

    def __init__(self, jobs: list[Job], suite: str, device: str):
        from benchmark.run.protocol_batches import ProtocolBatches

        self.suite, self.device, self.batches = suite, device, ProtocolBatches(jobs)

    def why_not(self, job: Job, jobdir: JobDir) -> str | None:
        summary = jobdir.read_summary()
        if summary is None or summary.status not in TERMINAL or not jobdir.is_done():
            return "it is not done (a gate runs it whole)"
        if (produced_by := summary.code_fingerprint) != (current := code_fingerprint()):
            return f"results of other code ({produced_by}, now {current})"
        if (changed := stale_parts(job, summary)) == UNKNOWN:
            return "its summary records no per-part code fingerprints"
        if changed:
            return f"the code of {', '.join(changed)} changed since it ran"
        stored = jobdir.read_metrics()
        if not stored:
            return "it has no metrics to check against"
        again = self.round_now(job, stored[0].round)
        if differing := [k for k in MEASURED if getattr(again, k, None) != getattr(stored[0], k)]:
            return (
                f"round {stored[0].round} computed by the current code differs from the stored one "
                f"({', '.join(differing)})"
            )
        return None

    def round_now(self, job: Job, upto: int) -> RoundRecord | None:
        """The metrics record of round `upto` as the current code computes it (in a scratch folder)."""
        from benchmark.run.job_runner import run_job

        with tempfile.TemporaryDirectory(prefix="fedbench-reuse-") as scratch:
            scratch_dir = JobDir.at(Path(scratch) / job.id)
            run_job(
                job, self.suite, scratch_dir, self.device, stop_after=upto, simulation_for=self.batches.simulation_for
            )
            return next((r for r in scratch_dir.read_metrics() if r.round == upto), None)
