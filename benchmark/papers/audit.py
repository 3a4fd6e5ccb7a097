"""`fedbench plan SUITE --audit`: every setting a paper states, and every one the suite decides
itself, next to the value the jobs run.

The jobs audited are the ones the command line asks for (after `--set`, `--rounds`, `--seeds`,
`--only`). Each stated path is looked up in a method's jobs and compared with the paper's value;
each `reference.chosen` entry (chosen / assumed / not reproducible) with the suite's value. A path
counts as swept only when the suite as written sweeps it (a sensitivity table, FedAc's η grid),
never because the command line set it. Any other setting the jobs run differently from the suite
as written (a `--set` on a path no paper line covers) is a mismatch too: a number measured so is
not the suite's, so it is not the paper's either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import BaseModel

from benchmark.data.participation import clients_per_round
from benchmark.job.config import JobConfig
from benchmark.papers.paper_settings import iterations_of
from benchmark.suite.expand import Job, expand
from benchmark.suite.schema import Suite

IMPLICIT = {"method.server.global_lr": 1.0}  # a rule without a server lr moves to the clients' average
NOT_SETTINGS = ("method", "method.*")  # compositions recorded by name; checked through their parameters
NOT_AUDITED = {"seed"}  # the papers state no seeds; more seeds measure the same setting


@dataclass
class AuditRow:
    source: str
    method: str
    setting: str
    status: str  # stated / assumed / chosen / not reproducible / command line
    paper: object  # the stated value; for the other kinds the value the suite decided
    runs: str
    ok: bool
    reason: str = ""  # a stated value's quote (or where it is written); why the suite decided one
    entry: int = -1  # the suite's dataset entry


def off_paper(suite: Suite, jobs: list[Job]) -> dict[tuple[int, str], str]:
    """(entry, method) -> the settings its jobs run other than the paper's or the suite's, as
    'setting paper/suite -> runs'; such a cell is not scored against the paper."""
    if not any(e.reference and (e.reference.stated or e.reference.chosen) for e in suite.datasets):
        return {}
    off: dict[tuple[int, str], list[str]] = {}
    for r in audit(suite, jobs):
        if not r.ok:
            off.setdefault((r.entry, r.method), []).append(f"{r.setting} {r.paper} -> {r.runs}")
    return {key: "; ".join(items) for key, items in off.items()}


class SettingsCache(dict):
    """job id -> settings_of(job), for one audit: a figure suite has tens of thousands of jobs,
    each read for many paths."""

    def of(self, job: Job) -> dict[str, object]:
        if job.id not in self:
            self[job.id] = settings_of(job)
        return self[job.id]


def job_value(job: Job, path: str, cache: SettingsCache | None = None):
    """The value a job runs for a dotted setting path (derived ones computed)."""
    c = job.config
    if path == "local.iterations":
        return iterations_of(c.dataset.name, c.num_clients, c.local.model_dump())
    if path == "participation.per_round":
        p = c.participation
        base = p.pool.size if p.pool and p.relative_to == "pool" else c.num_clients
        return round(p.rate * base, 6) if p.mode == "bernoulli" else clients_per_round(p.rate, base)
    found = (SettingsCache() if cache is None else cache).of(job)
    if path in found:
        return found[path]
    try:  # a field its identity class leaves out of dumps at its default (schema.py)
        return setting(c, path)
    except KeyError:
        return IMPLICIT.get(path)


def setting(config: JobConfig, path: str):
    """The value a job runs for a field path, read from the typed config; KeyError when there is none."""
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


def settings_of(job: Job) -> dict[str, object]:
    """Every setting of a job as dotted paths (method terms by name: `method.client.prox.mu`)."""
    raw = job.config.model_dump(mode="json")
    method = raw.pop("method")
    raw["dataset"].pop("reference", None)
    flat = _flatten(raw, "")
    flat.update(_flatten({k: v for k, v in method.items() if k not in ("client", "label")}, "method."))
    flat["method.client"] = [t["term"] for t in method["client"]]
    for term in method["client"]:
        flat.update(_flatten({k: v for k, v in term.items() if k != "term"}, f"method.client.{term['term']}."))
    return flat


def _flatten(node: dict, prefix: str) -> dict[str, object]:
    out = {}
    for key, value in node.items():
        if isinstance(value, dict) and value:
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(a - b) <= 1e-12 * max(1.0, abs(a))
    return a == b


def _applies(job: Job, path: str) -> bool:
    """A method parameter stated for every method applies only to methods that have it."""
    if not path.startswith("method.") or path in IMPLICIT or path == "method.client":
        return True
    try:
        setting(job.config, path)
    except KeyError:
        return False
    return True


def _by_method(jobs: list[Job]) -> dict[tuple[int, str], list[Job]]:
    groups: dict[tuple[int, str], list[Job]] = {}
    for j in jobs:
        groups.setdefault((j.dataset_index, j.method_label.split("[")[0]), []).append(j)
    return groups


def audit(suite: Suite, jobs: list[Job], written: list[Job] | None = None) -> list[AuditRow]:
    """Rows for every audited setting of `jobs` (the suite's jobs after the command line);
    `written`: the suite's jobs without command-line overrides, when the caller has them."""
    # the suite as written: what "swept" and "the suite's value" mean
    written = _by_method(expand(suite) if written is None else written)
    cache = SettingsCache()
    rows: list[AuditRow] = []
    for (d_index, label), m_jobs in _by_method(jobs).items():
        ref = suite.datasets[d_index].reference
        if ref is None or not (ref.stated or ref.chosen):
            continue
        suite_jobs = written.get((d_index, label), [])
        where = ref.stated_where + (f"; {ref.also_printed}" if ref.also_printed else "")
        quotes = {**ref.quotes.get("all", {}), **ref.quotes.get(label, {})}
        group = [
            _row(ref.source, label, path, value, m_jobs, suite_jobs, "stated", quotes.get(path, where), cache)
            for path, value in {**ref.stated.get("all", {}), **ref.stated.get(label, {})}.items()
        ]
        group += [
            _row(ref.source, label, c.setting, c.value, m_jobs, suite_jobs, c.status, c.reason, cache)
            for c in ref.chosen
            if c.method in (None, label) and c.setting not in NOT_SETTINGS
        ]
        known = {j.id for j in suite_jobs}  # a job the suite as written has runs exactly its settings
        drifting = [j for j in m_jobs if j.id not in known]
        group += _drift(ref.source, label, drifting, suite_jobs, {r.setting for r in group}, cache) if drifting else []
        for row in group:
            row.entry = d_index
        rows += group
    for d_index, entry in enumerate(suite.datasets):
        ref = entry.reference
        for name in sorted(set(ref.stated) - {"all"} - {m for d, m in written if d == d_index} if ref else ()):
            rows.append(
                AuditRow(ref.source, name, "(method)", "stated", "stated", "no such method in the suite", False)
            )
    return rows


def _row(source, label, path, value, jobs, suite_jobs, status, reason, cache) -> AuditRow:
    relevant = [j for j in jobs if _applies(j, path)]
    if not relevant:
        return AuditRow(source, label, path, status, value, "n/a (not a parameter of this method)", True, reason)
    runs = list(dict.fromkeys(json.dumps(job_value(j, path, cache)) for j in relevant))
    swept = list(dict.fromkeys(json.dumps(job_value(j, path, cache)) for j in suite_jobs if _applies(j, path)))
    if len(swept) > 1:  # the suite's own grid sweeps it: any of its values is the suite's
        ok = set(runs) <= set(swept)
        return AuditRow(source, label, path, status, value, "swept: " + ", ".join(runs), ok, reason)
    ok = all(_same(job_value(j, path, cache), value) for j in relevant)
    return AuditRow(source, label, path, status, value, ", ".join(runs), ok, reason)


def _numeric_first(text: str):
    """Sort key: numbers by value, then everything else as text."""
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def _drift(source, label, jobs, suite_jobs, checked: set[str], cache: SettingsCache) -> list[AuditRow]:
    """Settings no paper line covers that the jobs run differently from the suite as written."""
    suite_values: dict[str, set[str]] = {}
    for j in suite_jobs:
        for path, value in cache.of(j).items():
            suite_values.setdefault(path, set()).add(json.dumps(value))
    runs: dict[str, list[str]] = {}
    for j in jobs:
        for path, value in cache.of(j).items():
            text = json.dumps(value)
            if path not in checked | NOT_AUDITED and text not in suite_values.get(path, ()):
                runs.setdefault(path, [])
                if text not in runs[path]:
                    runs[path].append(text)
    return [
        AuditRow(
            source,
            label,
            path,
            "command line",
            ", ".join(sorted(suite_values.get(path, {"(absent)"}), key=_numeric_first)),
            ", ".join(values),
            False,
            "not the suite's setting (paper column: what the suite as written runs)",
        )
        for path, values in sorted(runs.items())
    ]
