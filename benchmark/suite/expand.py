"""Expand a suite into jobs: datasets x methods (x their grids) x suite grid x seeds.

Each job is fully resolved (every default filled in) and identified by a short hash of its
canonical content, so re-running a suite finds the jobs it already finished.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import hashlib
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError

from benchmark.errors import SuiteError, UserError
from benchmark.fl.method import MethodProblems, resolve_method
from benchmark.fl.pairing import model_problems
from benchmark.fl.spec import MethodSpec
from benchmark.job.config import JobConfig, JobData
from benchmark.job.plain_fields import with_plain_fields
from benchmark.params import (
    Identity,
    identity_json,
    identity_members,
    identity_of,
    joined,
    pydantic_problems,
    with_member,
)
from benchmark.suggest import allowed_names, unknown_name
from benchmark.suite.extends import withhold_changed_rows
from benchmark.suite.fields import has_field
from benchmark.suite.load import load_suite, located
from benchmark.suite.merge import deep_merge, merge_local
from benchmark.suite.metric_rounds import warn_metrics_past_the_end
from benchmark.suite.overrides import Overrides, Setting
from benchmark.suite.schema import SETTINGS_FIELDS, MethodOverride, Settings, Suite
from benchmark.suite.selection import label_names, matches_no_job


@dataclass(frozen=True)
class Job:
    id: str
    config: JobConfig
    grid_point: dict = field(default_factory=dict)
    dataset_index: int = 0  # which entry of the suite's `datasets:` it came from
    suite_point: dict = field(default_factory=dict)  # the suite grid's and command-line overrides' settings
    # the same job (same id) as other methods' or entries' grid points: run once, counted in each one's
    # selection and tuning budget (report/frames.py)
    also: tuple[Job, ...] = ()

    @property
    def views(self) -> tuple[Job, ...]:
        """This job as every method (and grid point) that expands to it."""
        return (self, *self.also)

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


def job_id(config: JobConfig, memo: dict | None = None) -> str:
    """A short hash of what identifies the job (the fields schema.py declares part of its identity);
    `memo`: params.identity_json's, shared by the jobs of one expansion."""
    return _hashed(identity_json(config, memo))


def _hashed(identity: str) -> str:
    return hashlib.sha256(identity.encode()).hexdigest()[:12]


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
    """(method, its own grid) per entry of `methods:`; each label once (tables, `--only` and the
    selection tell methods apart by it)."""
    out = []
    by_label: dict[str, tuple[int, MethodSpec, dict]] = {}
    for i, entry in enumerate(suite.methods):
        try:
            method = resolve_method(entry, f"methods[{i}]")
        except MethodProblems as err:
            problems.extend(err.problems)
            continue
        if method.label in by_label:
            first, other, grid = by_label[method.label]
            same = other == method and grid == entry.grid
            problems.append(
                (f"methods[{i}]", f"the same method as methods[{first}]: remove one")
                if same
                else (f"methods[{i}]", f"label {method.label!r} is methods[{first}]'s too: give one a `label:`")
            )
        by_label.setdefault(method.label, (i, method, entry.grid))
        out.append((method, entry.grid))
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
    from benchmark.models.factory_params import model_param_problems
    from benchmark.models.registry import MODELS, known_models

    for i, (entry, s) in enumerate(zip(suite.datasets, settings)):
        if entry.name not in DATASETS:
            problems.append(
                (
                    f"datasets[{i}].name",
                    unknown_name("dataset", entry.name, DATASETS.names()),
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
            problems.append((where, unknown_name("model", s.model.name, known_models())))
        elif s is not None:
            where = (
                f"datasets[{i}].model.params" if entry.model and "params" in entry.model else "defaults.model.params"
            )
            found = model_param_problems(MODELS[s.model.name].factory, s.model.params, where)
            problems.extend(p for p in found if p not in problems)  # defaults' once, not once per dataset


def _source(applied: list[Setting], path: str) -> str | None:
    """The command-line setting an error at `path` (a job-config path) comes from, as the user typed it."""
    for s in applied:
        if path == s.path or path.startswith(s.path + ".") or s.path.startswith(path + "."):
            return s.flag
    return None


def _located(found: list[tuple[str, str]], s_point: dict, applied: list[Setting]) -> list[tuple[str, str]]:
    """Job-config problems placed at the flag or grid point they come from; the path is said once."""
    placed = []
    for path, message in found:
        source = _source(applied, path)
        placed.append(
            (source, message)
            if source and source.endswith(path)
            else (source or f"grid ({s_point})", f"{path}: {message}")
        )
    return placed


def _job_config(raw: dict, s_point: dict, applied: list[Setting], file: str) -> JobConfig:
    """Apply a suite-grid point, then the command-line settings that reach this job, and validate it."""
    settings = [(key, value, f"grid.{key}") for key, value in s_point.items()]
    settings += [(s.path, s.value, s.flag) for s in applied]
    keys = [key for key, _, _ in settings]
    method_keys = {k.removeprefix("method.") for k in keys if k.startswith("method.")}
    if method_keys:  # set on the flat form, then validated again as a whole
        raw["method"] = raw["method"].model_dump(mode="json")
    for key, value, where in settings:
        try:
            set_path(raw, key, value)
        except KeyError as err:
            raise SuiteError(file, [(where, err.args[0])]) from None
    try:
        if method_keys:
            raw["method"] = resolve_method(raw["method"], "method", method_keys)
        config = JobConfig(**raw)
    except (ValidationError, MethodProblems) as err:
        found = err.problems if isinstance(err, MethodProblems) else pydantic_problems(err, model=JobConfig)
        raise SuiteError(file, _located(found, s_point, applied)) from None
    if any(k.startswith("dataset.") for k in keys):  # as _check_names does for the YAML
        from benchmark.data.source import DATASETS

        name, where = config.dataset.name, _source(applied, "dataset.name") or f"grid ({s_point})"
        if name not in DATASETS:
            raise SuiteError(file, [(where, unknown_name("dataset", name, DATASETS.names()))])
        params = DATASETS.get(name).params
        try:
            params(**config.dataset.params)
        except ValidationError as err:
            found = pydantic_problems(err, "dataset.params", params)
            raise SuiteError(file, _located(found, s_point, applied)) from None
    if any(k.startswith("model.") for k in keys):  # as _check_names does for the YAML
        from benchmark.models.factory_params import model_param_problems
        from benchmark.models.registry import MODELS, known_models

        name = config.model.name
        if name not in known_models():
            where = _source(applied, "model.name") or f"grid ({s_point})"
            raise SuiteError(file, [(where, unknown_name("model", name, known_models()))])
        if found := model_param_problems(MODELS[name].factory, config.model.params, "model.params"):
            raise SuiteError(file, _located(found, s_point, applied))
    return config


def _check_model_traits(method: MethodSpec, model_name: str, m_index: int, d_index: int, file: str) -> None:
    from benchmark.models.registry import model_traits

    problems = model_problems(method, model_name, model_traits(model_name), f"methods[{m_index}]")
    if problems:
        raise SuiteError(file, [(p, f"{m} (the model of datasets[{d_index}])") for p, m in problems])


def _fresh(value):
    """A copy of a YAML-like value (dicts, lists, scalars) to write into; deepcopy's memo costs 10x more."""
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    return [_fresh(v) for v in value] if isinstance(value, list) else value


def _sections(raw: dict, validated: dict) -> dict:
    """`raw` with each nested setting that validates on its own validated, once: the jobs of a
    template share these objects (their memory, and their identity dumps), and a job validates only
    what its grid point or --set changes. A section that fails stays as given, so the job's
    validation reports it at its path. `validated`: (name, id of the raw value) -> (raw value, its
    section), shared by an expansion's templates (a dataset entry's methods share its sections)."""
    out = dict(raw)
    for name, value in raw.items():
        model = JobConfig.model_fields[name].annotation
        if isinstance(value, dict) and isinstance(model, type) and issubclass(model, BaseModel):
            if (name, id(value)) in validated:
                out[name] = validated[name, id(value)][1]
                continue
            try:
                out[name] = model.model_validate(value)
                validated[name, id(value)] = (value, out[name])  # the raw value held: its id stays its own
            except ValidationError:
                pass
    for name, info in JobConfig.model_fields.items():  # a section the dump left out at its default (`select`):
        if name not in raw and info.default_factory is not None:  # one object shared, not one made per job
            default = info.default_factory()
            if isinstance(default, BaseModel):
                out[name] = default
    return out


@dataclass
class _Template:
    """What the jobs of one method variant on one dataset entry share (all but the suite grid
    point and the seed): selected or skipped as a whole by `--only` names, before any job is built."""

    raw: dict  # the job's settings as the suite gives them (its method a MethodSpec); never changed
    m_point: dict
    d_index: int
    m_index: int
    validated: dict = field(default_factory=dict, repr=False)  # _sections'
    sections: dict = field(init=False)
    traits_checked: bool = False
    first: tuple[JobConfig, dict[str, str]] | None = None  # its first job's config and identity members
    first_keys: list[str] | None = None  # the fields its grid point and settings wrote

    def __post_init__(self):
        self.sections = _sections(self.raw, self.validated)

    @functools.cached_property
    def shared_sections(self) -> tuple[tuple[str, BaseModel], ...]:
        return tuple((name, v) for name, v in self.sections.items() if isinstance(v, BaseModel))

    @functools.cached_property
    def labels(self) -> tuple[str, str]:
        return self.raw["method"].label, self.raw["dataset"].get("label") or self.raw["dataset"]["name"]

    @functools.cached_property
    def names(self) -> set[str]:
        return label_names(*self.labels)


@dataclass(frozen=True)
class _Candidate:
    """A job before the command-line settings: what `--only` and `--set NAME:` select."""

    template: _Template
    s_point: dict
    seed: int

    @property
    def labels(self) -> tuple[str, str]:
        return self.template.labels

    @property
    def names(self) -> set[str]:
        return self.template.names

    def reached_by(self, setting: Setting) -> bool:
        in_scope = setting.scope is None or setting.scope.lower() in self.names
        return in_scope and has_field(self.template.raw, setting.path)

    def job(self, applied: list[Setting], file: str, memo: dict | None = None, like: Job | None = None) -> Job:
        """`memo`: params.identity_json's, shared by an expansion's jobs. `like`: the job of this
        template and grid point with another seed, when no setting writes `seed`: this job's config
        is its config but for the seed, copied (sections and all), not validated again."""
        t = self.template
        if like is not None:  # its identity is like's but for the seed: like's members, the seed's replaced
            config = like.config.model_copy(update={"seed": self.seed})
            members = with_member(_members_of(like.config, memo), "seed", self.seed, memo)
            return Job(_hashed(joined(members)), config, like.grid_point, t.d_index, suite_point=like.suite_point)
        keys = [*self.s_point, *(s.path for s in applied)]
        point = {**self.s_point, **{s.path: s.value for s in applied}} if applied else self.s_point
        if memo is not None and t.first is not None and t.first_keys == keys and "." not in "".join(keys):
            # only plain top-level fields differ from the template's first job (a `num_clients` grid)
            values = {"seed": self.seed, **point}
            if (config := with_plain_fields(t.first[0], values)) is not None:
                job_id = _template_job_id(config, t, memo, changed=values)
                return Job(job_id, config, {**t.m_point, **point}, t.d_index, point)
        raw = {**t.sections, "seed": self.seed}
        for top in {key.split(".")[0] for key in keys} & set(raw):
            if top in t.raw:
                raw[top] = _fresh(t.raw[top])  # set_path writes into it (a method is re-resolved: left as it is)
            else:  # a section the suite leaves at its default (_sections' shared one): unset, as the suite has it
                del raw[top]
        config = _job_config(raw, self.s_point, applied, file)
        if any(key.startswith(("method.", "model.")) for key in keys):
            _check_model_traits(config.method, config.model.name, t.m_index, t.d_index, file)
        elif not t.traits_checked:
            _check_model_traits(config.method, config.model.name, t.m_index, t.d_index, file)
            t.traits_checked = True
        if t.first is None:
            t.first_keys = keys
        return Job(_template_job_id(config, t, memo), config, {**t.m_point, **point}, t.d_index, suite_point=point)

    def forget_own_sections(self, job: Job, memo: dict) -> None:
        """Drop from `memo` the sections no other grid point shares (they would pile up: 10^5 of them)."""
        memo.pop(("members", id(job.config)), None)
        values = job.config.__dict__
        for name, shared in self.template.shared_sections:
            if values[name] is not shared:
                memo.pop((name, id(values[name])), None)


def _template_job_id(config: JobConfig, t: _Template, memo: dict | None, changed: dict | None = None) -> str:
    """job_id(config); a job whose sections are its template's first job's (the same objects) and
    whose other fields differ from it only in plain scalars of the identity (a `num_clients` grid)
    takes that job's members with those swapped, not a dump of its own (fedac.authors_replay:
    38,640 jobs, a seed each); `changed`: the only fields where it may differ, when known."""
    if memo is None:
        return job_id(config)
    if t.first is None:
        t.first = (config, identity_members(config, memo))
        return _hashed(joined(t.first[1]))
    members = _swapped_members(config, *t.first, memo, changed or config.__dict__)
    return job_id(config, memo) if members is None else _hashed(joined(members))


_SCALARS = (int, float, str, bool, type(None))


@functools.cache
def _field_identities() -> dict[str, Identity]:
    return {name: identity_of(info) for name, info in JobConfig.model_fields.items()}


def _swapped_members(config: JobConfig, first: JobConfig, members: dict[str, str], memo: dict, names) -> dict | None:
    """`first`'s identity members with the plain fields where `config` differs swapped (of `names`, the
    fields where it may differ); None where a difference is not such a field (a section or list of its
    own, a field left out at its default)."""
    identities = _field_identities()
    before, now = first.__dict__, config.__dict__
    for name in names:
        value, was = now[name], before[name]
        if value is was or identities[name] is Identity.NEVER:
            continue
        if type(value) not in _SCALARS or type(was) is not type(value):
            return None
        if value == was and (type(value) is not float or repr(value) == repr(was)):  # -0.0 == 0.0, not in JSON
            continue
        if identities[name] is not Identity.ALWAYS or name not in members:
            return None
        members = with_member(members, name, value, memo)
    return members


def _members_of(config: JobConfig, memo: dict | None) -> dict[str, str]:
    """`identity_members(config)`, kept in `memo` by the config (held there, so its id stays its own)."""
    if memo is None:
        return identity_members(config)
    key = ("members", id(config))
    if key not in memo:
        memo[key] = (config, identity_members(config, memo))
    return memo[key][1]


def _templates(suite: Suite, methods, settings, file: str):
    validated: dict = {}
    for d_index, (entry, base) in enumerate(zip(suite.datasets, settings)):
        metrics = list(dict.fromkeys(base.metrics + (entry.reference.metrics if entry.reference else [])))
        base_raw = base.model_dump(exclude={"seeds"})
        dataset = entry.model_dump(include=set(JobData.model_fields))  # the job's part of the entry
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
                raw = {**base_raw, "local": merge_local(base_raw["local"], over.local)}
                raw.update(dataset=dataset, method=variant, seed=0, metrics=metrics)  # seed: each job's own
                yield _Template(raw, m_point, d_index, m_index, validated)


def _reaching_none(setting: Setting, kept: list[_Candidate], file: str) -> SuiteError:
    """A setting no selected job has: the error of applying it to a job in its scope (one whose
    fields hold a close match, when one does), plus the methods that lack it."""
    scoped = [c for c in kept if setting.scope is None or setting.scope.lower() in c.names]
    if not scoped:
        labels = {label for c in kept for label in c.labels}
        return SuiteError(
            file,
            [(setting.flag, f"{setting.scope!r} matches no selected job; " + allowed_names(setting.scope, labels))],
        )
    lacking = [(setting.flag, f"no selected job has {setting.path} (methods without it: {_methods_of(scoped)})")]
    errors = []
    for c in {c.labels: c for c in scoped}.values():  # one job per method and dataset
        try:
            c.job([setting], file)
        except SuiteError as err:
            errors.append(err.problems)
    errors.sort(key=lambda problems: not any("did you mean" in m for _, m in problems))
    return SuiteError(file, [*(errors[0] if errors else []), *lacking])


def _methods_of(candidates: list[_Candidate]) -> str:
    return ", ".join(sorted({c.labels[0] for c in candidates}))


# Jobs a suite may expand into unless --max-jobs says more: above the FedAc figures with 8 seeds
# (78,624), below what memory and minutes allow (10^5 jobs: benchmarks/README.md, expansion_scale.py).
MAX_JOBS = 200_000


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic collector paused while jobs are built: they all live on, so its passes over
    the growing heap find next to nothing (20 objects among 38,640 jobs) and took a fifth of the time.
    What was built is then moved to the oldest generation at once (freeze, unfreeze: two list splices),
    else the first collection after the pause walks all of it, and the next again (0.4 s of 38,640
    jobs' plan); a full collection still finds any garbage among it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:  # nobody else's frozen objects to thaw
                gc.freeze()
                gc.unfreeze()
            gc.enable()


@_collector_paused()
def expand(
    suite: Suite,
    file: str = "<suite>",
    overrides: Overrides | None = None,
    only: tuple[str, ...] = (),
    max_jobs: int = MAX_JOBS,
) -> list[Job]:
    """The suite's jobs; `only`: the names `--only` keeps (selected before the command-line settings
    are applied, each to the selected jobs whose config has its field). More than `max_jobs` is
    refused before any job is built."""
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

    templates = list(_templates(suite, methods, settings, file))
    s_points = _grid_points(suite.grid)
    wanted = {name.lower() for name in only}
    by_label = {name for name in wanted if any(name in t.names for t in templates)}
    maybe_ids = wanted - by_label  # a job's id is known once its settings are applied
    order = sorted(overrides.settings, key=lambda s: s.scope is not None)  # a scoped setting wins
    jobs: list[Job] = []
    kept: list[_Candidate] = []
    seen: dict[str, int] = {}  # job id -> its place in `jobs`
    used: set[int] = set()  # which settings reached a kept job
    found_ids: set[str] = set()
    memo: dict = {}
    built = [t for t in templates if not wanted or t.names & by_label or maybe_ids]
    _check_count(sum(len(s_points) * len(overrides.seeds or settings[t.d_index].seeds) for t in built), max_jobs)
    for t in built:
        picked = not wanted or bool(t.names & by_label)  # --only by name: the jobs it does not select are never built
        for s_point in s_points:
            first = None
            for seed in overrides.seeds or settings[t.d_index].seeds:
                c = _Candidate(t, s_point, seed)
                reaching = [i for i, s in enumerate(order) if c.reached_by(s)]
                applied = [order[i] for i in reaching]
                writes_seed = "seed" in s_point or any(s.path == "seed" for s in applied)
                job = c.job(applied, file, memo, like=None if writes_seed else first)
                first = first or job
                if not picked and job.id not in maybe_ids:
                    continue
                if not picked:
                    found_ids.add(job.id)
                kept.append(c)
                used.update(reaching)
                if job.id not in seen:
                    seen[job.id] = len(jobs)
                    jobs.append(job)
                elif _another_view(job, jobs[seen[job.id]]):
                    shared = jobs[seen[job.id]]
                    jobs[seen[job.id]] = dataclasses.replace(shared, also=(*shared.also, job))
            if first is not None:
                c.forget_own_sections(first, memo)
    for name in only:
        if name.lower() not in by_label | found_ids:
            raise matches_no_job("--only", name, sorted({label for t in templates for label in t.labels}))
    for i, setting in enumerate(order):
        if i not in used:
            raise _reaching_none(setting, kept, file)
    return jobs


def _check_count(count: int, max_jobs: int) -> None:
    if count > max_jobs:
        raise UserError(
            f"this selection expands to {count:,} jobs (datasets x methods x grids x seeds), more than the "
            f"limit of {max_jobs:,} (default {MAX_JOBS:,}); select fewer with --only or --seeds, or raise the "
            f"limit with --max-jobs {count}"
        )


def _another_view(job: Job, first: Job) -> bool:
    """Whether `job` (the id of `first`) is another method's, grid point's or entry's view of it."""
    key = lambda j: (j.method_label, j.dataset_index, j.grid_point, j.suite_point)  # noqa: E731
    return all(key(job) != key(view) for view in first.views)


@_collector_paused()  # reading the suite too (a 2,760-entry suite's YAML: a full collection, 0.2 s)
def load_jobs(
    path: str | Path, overrides: Overrides | None = None, only: tuple[str, ...] = (), max_jobs: int = MAX_JOBS
) -> tuple[Suite, list[Job]]:
    suite = load_suite(path)
    try:
        if suite.extends:  # the parent's reference rows whose jobs changed are withheld
            parent = load_suite(suite.extends)
            jobs = expand(suite, str(path), max_jobs=max_jobs)
            suite = withhold_changed_rows(suite, jobs, parent, expand(parent, suite.extends, max_jobs=max_jobs))
        jobs = expand(suite, str(path), overrides, only, max_jobs)
    except SuiteError as err:
        raise located(err, Path(path)) if err.file == str(path) else err from None
    warn_metrics_past_the_end(suite, jobs)
    return suite, jobs
