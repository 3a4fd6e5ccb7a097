"""A job's typed records: one line of metrics.jsonl per evaluated round (`RoundRecord`) and its
summary.json (`JobSummary`, or `FailedSummary` for a job that crashed). The files keep their
JSON form (`to_json`); a new per-round value is one field here."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from benchmark.store.job_status import FAILED


@dataclass
class RoundRecord:
    round: int
    test_acc: float
    test_loss: float
    train_loss: float
    ema_acc: float
    bytes_down: int
    bytes_up: int
    subopt: float | None = None  # F(w) − F*, only for `suboptimality: true` jobs
    val_acc: float | None = None  # on the held-out validation split, only for `select: {on: validation}` jobs
    val_loss: float | None = None
    time: float | None = None  # when it was measured (epoch seconds): MLflow plots against it
    wall_s: float | None = None  # training seconds up to it, across resumes (the report's time axis)
    # values of other writers (a newer or older fedbench) kept as they are, so a rewrite loses nothing
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_json(cls, rec: dict) -> RoundRecord:
        known = {f.name for f in fields(cls)} - {"extra"}
        return cls(
            **{k: v for k, v in rec.items() if k in known}, extra={k: v for k, v in rec.items() if k not in known}
        )

    def to_json(self) -> dict:
        """The metrics.jsonl form: absent optional values are left out, not null."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        return {**{k: v for k, v in out.items() if v is not None or k not in OPTIONAL}, **self.extra}


OPTIONAL = ("subopt", "val_acc", "val_loss", "time", "wall_s")
# what a round measured (MLflow's per-round metrics): every value but the round and the clocks
MEASURED = tuple(f.name for f in fields(RoundRecord) if f.name not in ("round", "time", "wall_s", "extra"))


# summary.json's layout version: 2 since jobs are stored by id (store/job_store.py); a summary without the
# field is version 1, read the same way (its fields are a subset of today's)
SUMMARY_SCHEMA = 2


@dataclass
class FailedSummary:
    """summary.json of a job that crashed: what it was, and the error (a rerun tries it again)."""

    job_id: str
    suite: str
    dataset: str
    method: str
    seed: int
    error: str
    traceback: str = ""
    status: str = FAILED
    code_fingerprint: str | None = None  # run/code_fingerprint.py
    code_parts: dict | None = None  # part -> fingerprint of its code (run/code_parts.py)
    code_versions: dict | None = None  # distribution -> version, of fedbench and the plugins it ran
    schema: int = SUMMARY_SCHEMA

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class Divergence:
    at_round: int
    error: str
    last_finite: dict | None  # the last record with finite values, None if none was evaluated


@dataclass
class JobSummary:
    """summary.json of a job that ran (finished, stopped, diverged); a diverged job has no accuracy:
    what a NaN model "scores" is the argmax of NaN logits."""

    job_id: str
    suite: str
    dataset: str
    method: str
    seed: int
    data_fingerprint: str
    bytes_down: int
    bytes_up: int
    status: str
    rounds_completed: int
    final_acc: float | None = None
    final_ema_acc: float | None = None
    final_subopt: float | None = None
    # select: on validation: the EMA of the validation accuracy at the last round (what a grid is
    # selected on), and what was held out: {"holdout", "held_out" examples, "too_small" clients}
    final_val_ema_acc: float | None = None
    validation: dict | None = None
    # natural-user data: the last round's test accuracy per client, summarised (metrics.client_spread:
    # p10 ... p90, mean, clients); each client's value is in client_acc.json beside the summary
    client_acc: dict | None = None
    metrics: dict = field(default_factory=dict)  # acc@R, rounds_to@X, ... (benchmark.metrics.summarise)
    wall_time_s: float | None = None
    threads: dict | None = None  # torch's CPU threads: {"count", "chosen_by"} (run/threads.py)
    execution: str | None = None  # the trainer that ran ("auto" resolves to one) and, for auto, its probe
    execution_probe: dict | None = None
    # per trainer that ran, which local step produced the numbers: {"step": "fused" | "plain", "why"} (engine/low_rank_step.py)
    local_step: dict | None = None
    # execution: vectorised: clients per call and why, {"chunk", "why", ...} (engine/vmap_chunk.py)
    vmap_chunk: dict | None = None
    code_fingerprint: str | None = None  # the code that produced it (run/code_fingerprint.py)
    code_parts: dict | None = None  # part -> fingerprint of its code: what makes it stale (run/code_parts.py)
    code_versions: dict | None = None  # distribution -> version, of fedbench and the plugins it ran
    environment: dict | None = None  # versions, device, threads, determinism flags (run/environment.py)
    diverged: Divergence | None = None
    schema: int = SUMMARY_SCHEMA

    def to_json(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "diverged"}
        if self.diverged:
            d = self.diverged
            out.update(diverged_at_round=d.at_round, error=d.error, last_finite=d.last_finite)
        return out
