"""A job's status, as written in its summary.json: the one vocabulary every reader uses.

- finished: every round ran; its numbers are results.
- diverged: the loss or the parameters became non-finite at `diverged_at_round`; the job
  stopped there. A result (the method does not train at this setting), never a number:
  tables, best-over-grid selection, baselines and MLflow summaries leave its accuracy out.
- failed: the job crashed (`error`, `traceback`); rerunning the suite retries it.
- stopped: `--stop-after` ended it early on purpose; rerunning resumes it.

finished and diverged are terminal: a rerun skips them.

- damaged: never written, but what readers call a finished job whose files cannot be trusted (its
  summary.json or metrics.jsonl cut, missing or holding NaN: results.JobDir.damage); `status` shows
  it, it is never mirrored to MLflow, and the next `run` trains it again (or resumes it from its checkpoint).
"""

from __future__ import annotations

FINISHED = "finished"
DIVERGED = "diverged"
FAILED = "failed"
STOPPED = "stopped"
DAMAGED = "damaged"

TERMINAL = (FINISHED, DIVERGED)


def methods_all_diverged(labels_and_summaries: list[tuple[str, dict]]) -> list[str]:
    """Methods (labels) every one of whose jobs diverged: nothing of them can be reported.

    An lr sweep diverging at its largest value is a normal result; a method with no job left
    is not, and makes `fedbench run` exit 1.
    """
    by_method: dict[str, list[str]] = {}
    for label, s in labels_and_summaries:
        by_method.setdefault(label, []).append(s.status)
    return [m for m, statuses in by_method.items() if statuses and all(st == DIVERGED for st in statuses)]
