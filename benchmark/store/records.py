"""A job's typed records: one line of metrics.jsonl per evaluated round (`RoundRecord`) and its
summary.json (`JobSummary`, or `FailedSummary` for a job that crashed). The files keep their
JSON form (`to_json`); a new per-round value is one declaration in benchmark/round_values.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, make_dataclass

from benchmark.round_values import BUILT_IN
from benchmark.store.job_status import FAILED


class RoundRecordReads:
    """RoundRecord's methods; its fields are the built-in per-round values (round_values.BUILT_IN), then
    `extra` (values of other writers: a plugin's, a newer or older fedbench's, kept as they are, so a
    rewrite loses nothing)."""

    @classmethod
    def from_json(cls, rec: dict) -> RoundRecord:
        """A metrics.jsonl record as any writer left it: a value it lacks reads None, one of another is in `extra`."""
        other = {} if rec.keys() <= KNOWN_ROUND else {k: v for k, v in rec.items() if k not in KNOWN_ROUND}
        return cls(**{k: rec.get(k) for k in ROUND_FIELDS}, extra=other)

    def to_json(self) -> dict:
        """The metrics.jsonl form: absent optional values are left out, not null."""
        out = {k: getattr(self, k) for k in ROUND_FIELDS}
        return {**{k: v for k, v in out.items() if v is not None or k not in OPTIONAL}, **self.extra}

    def value(self, name: str):
        """A declared per-round value, built-in or a plugin's (round_values.py); None where the round lacks it."""
        return getattr(self, name) if name in KNOWN_ROUND else self.extra.get(name)


# a line of metrics.jsonl: a field per built-in value, as declared (a new one is one declaration there)
RoundRecord = make_dataclass(
    "RoundRecord",
    [(v.name, v.type | None, field(default=None)) if v.optional else (v.name, v.type) for v in BUILT_IN]
    + [("extra", dict, field(default_factory=dict))],
    bases=(RoundRecordReads,),
    namespace={"__module__": __name__},
)
OPTIONAL = tuple(v.name for v in BUILT_IN if v.optional)
ROUND_FIELDS = tuple(v.name for v in BUILT_IN)
KNOWN_ROUND = frozenset(ROUND_FIELDS)
# what a round measured (MLflow's per-round metrics of the built-in values): every value but the round and the clocks
MEASURED = tuple(v.name for v in BUILT_IN if v.mlflow)


@dataclass
class ClientAccuracy:
    """client_acc.json (natural-user data): each user's test accuracy at the job's last round, by user id."""

    round: int
    accuracy: dict[str, float]

    @classmethod
    def from_json(cls, data: dict) -> ClientAccuracy:
        return cls(round=data["round"], accuracy=data["accuracy"])

    def to_json(self) -> dict:
        return {"round": self.round, "accuracy": self.accuracy}


# summary.json's layout version: 2 since jobs are stored by id (store/job_store.py); a summary without the
# field is version 1, read the same way (its fields are a subset of today's)
SUMMARY_SCHEMA = 2
# fields of a summary object that are not summary.json's (`skipped`, `stale`: how a run reuses a done job)
NOT_WRITTEN = ("diverged", "extra", "skipped", "stale")


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
    extra: dict = field(default_factory=dict)  # fields of another fedbench version, kept as they are
    skipped: bool = False  # a done job a run reused rather than ran
    stale: list[str] | None = None  # reused with --keep-stale: the parts whose code changed since (run/stale.py)

    def to_json(self) -> dict:
        return {**{f.name: getattr(self, f.name) for f in fields(self) if f.name not in NOT_WRITTEN}, **self.extra}


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
    extra: dict = field(default_factory=dict)  # fields of another fedbench version, kept as they are
    skipped: bool = False  # a done job a run reused rather than ran
    stale: list[str] | None = None  # reused with --keep-stale: the parts whose code changed since (run/stale.py)

    error = property(lambda self: self.diverged.error if self.diverged else None)  # as a failed job's

    def to_json(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in NOT_WRITTEN}
        if self.diverged:
            d = self.diverged
            out.update(diverged_at_round=d.at_round, error=d.error, last_finite=d.last_finite)
        return {**out, **self.extra}


DIVERGENCE = {"diverged_at_round": "at_round", "error": "error", "last_finite": "last_finite"}
# per kind: the fields read from summary.json, and every key it may hold that is not `extra`
READ = {
    kind: [f.name for f in fields(kind) if f.name not in (*NOT_WRITTEN, "schema")]
    for kind in (JobSummary, FailedSummary)
}
KNOWN = {FailedSummary: {*READ[FailedSummary], "schema"}, JobSummary: {*READ[JobSummary], "schema", *DIVERGENCE}}


def summary_from_json(data: Mapping) -> JobSummary | FailedSummary:
    """summary.json typed, as any fedbench wrote it (schema 1 or 2) and however little it holds: a field it
    lacks reads None, as `.get` did (a schema-1 summary, a cut-down one), one of another
    version is kept in `extra`; values are not checked (the store's `damage` says what cannot be trusted).
    A summary already typed is returned as it is. A no-op `run` reads every job's: it stays a few microseconds."""
    if isinstance(data, (JobSummary, FailedSummary)):
        return data
    kind = FailedSummary if data.get("status") == FAILED else JobSummary
    known = KNOWN[kind]
    summary = kind(
        **{name: data.get(name) for name in READ[kind]},
        schema=data.get("schema", 1),
        extra={k: v for k, v in data.items() if k not in known},
    )
    if kind is JobSummary:
        summary.metrics = summary.metrics or {}
        if data.get("diverged_at_round") is not None:
            summary.diverged = Divergence(**{ours: data.get(theirs) for theirs, ours in DIVERGENCE.items()})
    return summary


NO_SUMMARY = summary_from_json({})  # what a job not run yet reads as: every field None


def measured(summary: JobSummary | FailedSummary) -> JobSummary:
    """What a job measured: its summary, or for a failed job (which measured nothing) NO_SUMMARY's None values."""
    return summary if isinstance(summary, JobSummary) else NO_SUMMARY


@dataclass(slots=True)
class Outcome:
    """What a run keeps of a reused job's summary when it prints no result table (over `LISTED_UP_TO`
    jobs): its status counts, the exit status and the stale line; 10^5 whole summaries held 1.2 GB."""

    job_id: str
    status: str
    stale: list[str] | None = None
    skipped: bool = True
