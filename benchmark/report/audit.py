"""`fedbench plan SUITE --audit`: each setting a paper states next to the value the suite runs.

For every dataset entry with `reference.stated` / `reference.chosen`, and every method of it,
each stated path is looked up in the method's jobs (all seeds and grid points) and compared; a
grid that sweeps the setting (a sensitivity table) is shown as swept, not as a mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from benchmark.data.participation import clients_per_round
from benchmark.report.paper_settings import iterations_of
from benchmark.suite.expand import Job
from benchmark.suite.schema import JobConfig, Suite

IMPLICIT = {"method.server.global_lr": 1.0}  # a rule without a server lr moves to the clients' average


@dataclass
class AuditRow:
    source: str
    method: str
    setting: str
    paper: object  # stated value, or "(silent)" for a chosen one
    runs: str
    ok: bool
    reason: str = ""


def job_value(job: Job, path: str):
    """The value a job runs for a dotted setting path (derived ones computed)."""
    c = job.config
    if path == "local.iterations":
        return iterations_of(c.dataset.name, c.num_clients, c.local.model_dump())
    if path == "participation.per_round":
        p = c.participation
        base = p.pool.size if p.pool and p.relative_to == "pool" else c.num_clients
        return round(p.rate * base, 6) if p.mode == "bernoulli" else clients_per_round(p.rate, base)
    try:
        return setting(c, path)
    except KeyError:
        return IMPLICIT.get(path)


def setting(config: JobConfig, path: str):
    """The value a job runs for a field path, read from the typed config: also a field that its
    identity class leaves out of dumps at its default (schema.py); KeyError when there is none."""
    if path.startswith("method."):
        return config.method.param(path.removeprefix("method."))
    node = config
    for key in path.split("."):
        if isinstance(node, BaseModel) and key in type(node).model_fields:
            node = getattr(node, key)
        elif isinstance(node, dict) and key in node:
            node = node[key]
        else:
            raise KeyError(path)
    return node.model_dump(mode="json") if isinstance(node, BaseModel) else node


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(a - b) <= 1e-12 * max(1.0, abs(a))
    return a == b


def _swept(job: Job, path: str) -> bool:
    return any(path.endswith(k) or k.endswith(path.removeprefix("method.")) for k in job.grid_point)


def _applies(job: Job, path: str) -> bool:
    """A method parameter stated for every method applies only to methods that have it."""
    if not path.startswith("method.") or path in IMPLICIT:
        return True
    try:
        setting(job.config, path)
    except KeyError:
        return False
    return True


def audit(suite: Suite, jobs: list[Job]) -> list[AuditRow]:
    rows: list[AuditRow] = []
    for d_index, entry in enumerate(suite.datasets):
        ref = entry.reference
        if ref is None or not (ref.stated or ref.chosen):
            continue
        by_method: dict[str, list[Job]] = {}
        for j in jobs:
            if j.dataset_index == d_index:
                by_method.setdefault(j.method_label.split("[")[0], []).append(j)
        unknown = set(ref.stated) - {"all"} - set(by_method)
        for label in sorted(unknown):
            rows.append(AuditRow(ref.source, label, "(method)", "stated", "no such method in the suite", False))
        for label, m_jobs in by_method.items():
            stated = {**ref.stated.get("all", {}), **ref.stated.get(label, {})}
            for path, value in stated.items():
                rows.append(_row(ref.source, label, path, value, m_jobs, "stated"))
            for c in ref.chosen:
                if c.method in (None, label) and c.setting not in ("method", "method.*"):
                    rows.append(_row(ref.source, label, c.setting, c.value, m_jobs, c.reason))
    return rows


def _row(source: str, label: str, path: str, value, jobs: list[Job], why: str) -> AuditRow:
    relevant = [j for j in jobs if _applies(j, path)]
    paper = value if why == "stated" else "(silent)"
    if not relevant:
        return AuditRow(
            source, label, path, paper, "n/a (not a parameter of this method)", True, "" if why == "stated" else why
        )
    swept = [j for j in relevant if _swept(j, path)]
    fixed = [j for j in relevant if j not in swept]
    values = list(dict.fromkeys(str(job_value(j, path)) for j in fixed))
    ok = all(_same(job_value(j, path), value) for j in fixed)
    runs = ", ".join(values) + (" (swept by the grid)" if swept and not fixed else "")
    if swept and not fixed:
        runs = "swept: " + ", ".join(sorted({str(job_value(j, path)) for j in swept}))
    return AuditRow(source, label, path, paper, runs, ok, "" if why == "stated" else f"chosen {value!r}: {why}")
