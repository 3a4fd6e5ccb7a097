"""Expand a suite into jobs: datasets x methods (x their grids) x suite grid x seeds.

Each job is fully resolved (every default filled in) and identified by a short hash of its
canonical content, so re-running a suite finds the jobs it already finished.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from benchmark.errors import SuiteError
from benchmark.fl.method import MethodProblems, resolve_method
from benchmark.fl.pairing import model_problems
from benchmark.fl.spec import MethodSpec
from benchmark.params import identity_dump, pydantic_problems
from benchmark.suggest import allowed_names
from benchmark.suite.load import load_suite
from benchmark.suite.overrides import Overrides
from benchmark.suite.schema import SETTINGS_FIELDS, JobConfig, MethodOverride, Settings, Suite


@dataclass(frozen=True)
class Job:
    id: str
    config: JobConfig
    grid_point: dict = field(default_factory=dict)
    dataset_index: int = 0  # which entry of the suite's `datasets:` it came from
    suite_point: dict = field(default_factory=dict)  # the suite grid's and command-line overrides' settings

    @property
    def setting_label(self) -> str:
        """The method label plus the suite-grid / override settings: a row of a results table."""
        return " ".join([self.method_label, *(f"{k}={v}" for k, v in self.suite_point.items())])

    @property
    def method_label(self) -> str:
        return self.config.method.label

    @property
    def dataset_label(self) -> str:
        d = self.config.dataset
        return d.label or d.name


def deep_merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def merge_local(base: dict, over: dict) -> dict:
    """Local-training settings `over` laid over `base`; giving one budget (epochs or steps)
    drops the other, so a table's `steps: 70` replaces the default `epochs: 5`."""
    out = deep_merge(base, over)
    for budget, other in (("steps", "epochs"), ("epochs", "steps")):
        if over.get(budget) is not None and other not in over:
            out[other] = None
    return out


def canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def job_id(config: JobConfig) -> str:
    """A short hash of what identifies the job (the fields schema.py declares part of its identity)."""
    return hashlib.sha256(canonical_json(identity_dump(config)).encode()).hexdigest()[:12]


def set_path(target: dict, dotted: str, value) -> None:
    """Set `a.b.c` in nested dicts; inside `method.client` a segment may name a term or an index."""
    keys = dotted.split(".")
    node = target
    for i, key in enumerate(keys[:-1]):
        if isinstance(node, list):
            node = _list_item(node, key, dotted)
            continue
        if key not in node or not isinstance(node[key], (dict, list)):
            if i == 0:
                raise KeyError(f"unknown field {keys[0]!r}; " + allowed_names(keys[0], node))
            node[key] = {}
        node = node[key]
    if isinstance(node, list):
        raise KeyError(f"{dotted}: cannot replace a whole list item")
    node[keys[-1]] = value


def _list_item(items: list, key: str, dotted: str):
    if key.isdigit() and int(key) < len(items):
        return items[int(key)]
    for item in items:
        if isinstance(item, dict) and key in (item.get("term"), item.get("rule"), item.get("codec")):
            return item
    names = [str(item.get("term") or item.get("rule") or item.get("codec")) for item in items if isinstance(item, dict)]
    raise KeyError(f"{dotted}: no item {key!r}; " + allowed_names(key, names))


def _grid_points(grid: dict[str, list]) -> list[dict]:
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def _settings_for(suite: Suite, index: int, problems: list) -> Settings | None:
    entry = suite.datasets[index]
    overrides = {k: v for k, v in entry.model_dump(exclude_none=True).items() if k in SETTINGS_FIELDS}
    base = suite.defaults.model_dump()
    try:
        merged = deep_merge(base, overrides)
        merged["local"] = merge_local(base["local"], overrides.get("local", {}))
        return Settings(**merged)
    except ValidationError as err:
        problems.extend(pydantic_problems(err, f"datasets[{index}]", Settings))
        return None


def _methods(suite: Suite, problems: list) -> list[tuple[MethodSpec, dict]]:
    """(method, its own grid) per entry of `methods:`."""
    out = []
    for i, entry in enumerate(suite.methods):
        try:
            out.append((resolve_method(entry, f"methods[{i}]"), entry.grid))
        except MethodProblems as err:
            problems.extend(err.problems)
    return out


def _method_variant(method: MethodSpec, grid_point: dict, index: int) -> MethodSpec:
    if not grid_point:
        return method
    label = method.label + "[" + ",".join(f"{k.split('.')[-1]}={v}" for k, v in grid_point.items()) + "]"
    return _with_values(method, {**grid_point, "label": label}, f"methods[{index}]")


def _with_values(method: MethodSpec, values: dict, path: str) -> MethodSpec:
    """The method with these method-relative paths (`server.lam`, `client.prox.mu`) set, resolved again;
    a shared hyper-parameter follows the side they set."""
    variant = method.model_dump(mode="json")
    for key, value in values.items():
        set_path(variant, key, value)
    return resolve_method(variant, path, set(values))


def _check_overrides(suite: Suite, methods: list[tuple[MethodSpec, dict]], problems: list) -> None:
    labels = {m.label for m, _ in methods}
    for i, entry in enumerate(suite.datasets):
        for label in entry.method_overrides:
            where = f"datasets[{i}].method_overrides.{label}"
            if label not in labels:
                problems.append((where, f"no method labelled {label!r}; methods: {', '.join(sorted(labels))}"))


def _overridden(method: MethodSpec, over: MethodOverride, path: str) -> MethodSpec:
    """The method with this dataset entry's `server:` / `client:` (term -> params) overrides."""
    values = {f"server.{k}": v for k, v in over.server.items()}
    values |= {f"client.{t}.{k}": v for t, params in over.client.items() for k, v in params.items()}
    if not values:
        return method
    for term in over.client:
        if method.term(term) is None:
            names = allowed_names(term, method.term_names)
            raise MethodProblems([(f"{path}.client.{term}", f"this method has no client term {term!r}; {names}")])
    return _with_values(method, values, path)


def _check_names(suite: Suite, settings: list[Settings | None], problems: list) -> None:
    """Dataset and model names must be registered (checked here so errors carry YAML paths)."""
    from benchmark.data.source import DATASETS
    from benchmark.models.registry import known_models

    for i, (entry, s) in enumerate(zip(suite.datasets, settings)):
        if entry.name not in DATASETS:
            problems.append(
                (
                    f"datasets[{i}].name",
                    f"unknown dataset {entry.name!r}; " + allowed_names(entry.name, DATASETS.names()),
                )
            )
        else:
            params = DATASETS.get(entry.name).params
            try:
                params(**entry.params)
            except ValidationError as err:
                problems.extend(pydantic_problems(err, f"datasets[{i}].params", params))
        if s is not None and s.model.name not in known_models():
            where = f"datasets[{i}].model.name" if entry.model and "name" in entry.model else "defaults.model.name"
            problems.append((where, f"unknown model {s.model.name!r}; " + allowed_names(s.model.name, known_models())))


def _located(found: list[tuple[str, str]], s_point: dict, overrides: Overrides) -> list[tuple[str, str]]:
    """Job-config problems placed at the flag or grid point they come from; the path is said once."""
    placed = []
    for path, message in found:
        source = overrides.source(path)
        placed.append(
            (source, message) if source == f"--set {path}" else (source or f"grid ({s_point})", f"{path}: {message}")
        )
    return placed


def _job_config(raw: dict, s_point: dict, overrides: Overrides, file: str) -> JobConfig:
    """Apply a suite-grid point, then the command-line overrides, and validate the job."""
    method_keys = {k.removeprefix("method.") for k in [*s_point, *overrides.values] if k.startswith("method.")}
    if method_keys:  # set on the flat form, then validated again as a whole
        raw["method"] = raw["method"].model_dump(mode="json")
    for key, value in [*s_point.items(), *overrides.values.items()]:
        try:
            set_path(raw, key, value)
        except KeyError as err:
            raise SuiteError(
                file, [(overrides.source(key) if key in overrides.values else f"grid.{key}", err.args[0])]
            ) from None
    try:
        if method_keys:
            raw["method"] = resolve_method(raw["method"], "method", method_keys)
        config = JobConfig(**raw)
    except (ValidationError, MethodProblems) as err:
        found = err.problems if isinstance(err, MethodProblems) else pydantic_problems(err, model=JobConfig)
        raise SuiteError(file, _located(found, s_point, overrides)) from None
    if any(k.startswith("dataset.") for k in [*s_point, *overrides.values]):  # as _check_names does for the YAML
        from benchmark.data.source import DATASETS

        name, where = config.dataset.name, overrides.source("dataset.name") or f"grid ({s_point})"
        if name not in DATASETS:
            raise SuiteError(file, [(where, f"unknown dataset {name!r}; " + allowed_names(name, DATASETS.names()))])
        params = DATASETS.get(name).params
        try:
            params(**config.dataset.params)
        except ValidationError as err:
            found = pydantic_problems(err, "dataset.params", params)
            raise SuiteError(file, _located(found, s_point, overrides)) from None
    return config


def _check_model_traits(config: JobConfig, m_index: int, d_index: int, file: str) -> None:
    from benchmark.models.registry import model_traits

    name = config.model.name
    problems = model_problems(config.method, name, model_traits(name), f"methods[{m_index}]")
    if problems:
        raise SuiteError(file, [(p, f"{m} (the model of datasets[{d_index}])") for p, m in problems])


def expand(suite: Suite, file: str = "<suite>", overrides: Overrides | None = None) -> list[Job]:
    overrides = overrides or Overrides()
    problems: list[tuple[str, str]] = []
    methods = _methods(suite, problems)
    settings = [_settings_for(suite, i, problems) for i in range(len(suite.datasets))]
    _check_names(suite, settings, problems)
    _check_overrides(suite, methods, problems)
    for key, values in suite.grid.items():
        if not values:
            problems.append((f"grid.{key}", "a grid needs at least one value"))
    if problems:
        raise SuiteError(file, problems)

    jobs: list[Job] = []
    seen: set[str] = set()
    for d_index, (entry, base) in enumerate(zip(suite.datasets, settings)):
        metrics = list(dict.fromkeys(base.metrics + (entry.reference.metrics if entry.reference else [])))
        for m_index, (method, method_grid) in enumerate(methods):
            over = entry.method_overrides.get(method.label, MethodOverride())
            try:
                method = _overridden(method, over, f"datasets[{d_index}].method_overrides.{method.label}")
            except MethodProblems as err:
                raise SuiteError(file, err.problems) from None
            for m_point in _grid_points(method_grid):
                try:
                    variant = _method_variant(method, m_point, m_index)
                except (KeyError, MethodProblems) as err:
                    msg = err.args[0] if isinstance(err, KeyError) else "; ".join(m for _, m in err.problems)
                    raise SuiteError(file, [(f"methods[{m_index}].grid", f"{m_point}: {msg}")]) from None
                for s_point in _grid_points(suite.grid):
                    for seed in overrides.seeds or base.seeds:
                        raw = base.model_dump(exclude={"seeds"})
                        raw["local"] = merge_local(raw["local"], over.local)
                        dataset = entry.model_dump(exclude=SETTINGS_FIELDS | {"method_overrides"})
                        raw.update(dataset=dataset, method=variant, seed=seed, metrics=metrics)
                        config = _job_config(raw, s_point, overrides, file)
                        _check_model_traits(config, m_index, d_index, file)
                        point = {**s_point, **overrides.values}
                        job = Job(job_id(config), config, {**m_point, **point}, d_index, suite_point=point)
                        if job.id not in seen:
                            seen.add(job.id)
                            jobs.append(job)
    return jobs


def load_jobs(path: str | Path, overrides: Overrides | None = None) -> tuple[Suite, list[Job]]:
    suite = load_suite(path)
    return suite, expand(suite, str(path), overrides)
