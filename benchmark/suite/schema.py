"""The suite file format (pydantic). A suite = defaults + datasets + methods (+ grid, reference).

suite/expand.py resolves it into jobs (job/config.JobConfig): a dataset entry gives a job its dataset
(job/config.JobData) and overrides of the `defaults:` settings (job/settings.JobSettings).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field, ValidationError, create_model, field_validator, model_serializer, model_validator

from benchmark.fl.spec import MethodEntry
from benchmark.job.config import JobData
from benchmark.job.settings import JobSettings, Seed, Strict, metric_names
from benchmark.params import Identity, declared, pydantic_problems
from benchmark.registry import Registry


class Contradicted(Strict):
    """A printed cell the paper itself contradicts: shown flagged, never scored against."""

    row: str
    metric: str
    reason: str


class Chosen(Strict):
    """A setting the paper does not state outright: what the suite runs, why, and on what footing."""

    setting: str = Field(description="dotted job-config path, e.g. local.clip_norm")
    value: Any
    reason: str = Field(description="why this value, and where it comes from (authors' code, a default, a measurement)")
    method: str | None = Field(None, description="the method label it applies to; None: every method")
    status: Literal["read from the text", "chosen", "assumed", "not reproducible"] = Field(
        "chosen",
        description="read from the text: implied by the paper's text, not stated outright (the reason quotes it); "
        "chosen: the paper is silent or gives a set; assumed: our reading of an ambiguous or lost "
        "passage, or of a sentence about something else; not reproducible: the suite cannot run what the paper did",
    )


@dataclass(frozen=True)
class ReferencePart:
    """A protocol's block of a dataset entry's `reference:`, under its own key (FedAc's `authors:`,
    protocols/fedac/suite_parts.py), validated by `model`."""

    name: str
    model: type[BaseModel]


# filled by the protocols: reading it first imports benchmark/protocols/
REFERENCE_PARTS: Registry[ReferencePart] = Registry("reference part", "benchmark.protocols")


class Reference(Strict):
    """A paper table's numbers for this dataset entry: row label -> values, one per metric.

    `stated` records what the paper states (dotted job-config paths; key `all` for every
    method, a method label for that method); `chosen` what the suite picked where the paper is
    silent. `fedbench plan --audit` checks the jobs against both.
    """

    source: str = Field(
        description="where the numbers come from: the transcribed table's id, e.g. fedacg.moderate_dir0.3.cifar10"
    )
    metrics: list[str]
    rows: dict[str, list[float | int | str | None]]
    contradicted: list[Contradicted] = Field(default_factory=list)
    stated: dict[str, dict[str, Any]] = Field(default_factory=dict)
    quotes: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        exclude_if=lambda v: not v,
        description="`stated`'s shape, each setting's quote of the paper: 'NNN:L[-L2]: verbatim text' "
        "(benchmark/papers/paper_quotes.py)",
    )
    stated_where: str = Field("", description="the paper's table and lines the stated settings are read from")
    chosen: list[Chosen] = Field(default_factory=list)
    withheld: dict[str, str] = Field(
        default_factory=dict,
        exclude_if=lambda v: not v,
        description="row -> why its numbers are not shown: a suite extending this one changed their settings",
    )
    also_printed: str = Field(
        "",
        exclude_if=lambda v: not v,
        description="another paper's other numbers for (what may be) this protocol; the report shows them beside",
    )
    parts: dict[str, Any] = Field(
        default_factory=dict,
        exclude_if=lambda v: not v,
        description="each registered part's block (REFERENCE_PARTS), written beside the fields above under its key",
    )

    @model_validator(mode="before")
    @classmethod
    def _registered_parts(cls, data):
        """A key that is no field of a Reference but a registered part's is validated by the part's model."""
        if not isinstance(data, dict) or set(data) <= set(cls.model_fields) - {"parts"}:
            return data
        if "parts" in data:
            raise ValueError("write each part under its own key (e.g. `authors:`), not under `parts:`")
        own = {k: v for k, v in data.items() if k in cls.model_fields or k not in REFERENCE_PARTS}
        parts = {}
        for key in data.keys() - own.keys():
            model = REFERENCE_PARTS.get(key).model
            try:
                parts[key] = model.model_validate(data[key])
            except ValidationError as err:
                raise ValueError("; ".join(f"{p}: {m}" for p, m in pydantic_problems(err, key, model))) from None
        return {**own, "parts": parts}

    @model_serializer(mode="wrap")
    def _parts_in_place(self, handler):
        data = handler(self)
        return (
            {**{k: v for k, v in data.items() if k != "parts"}, **data.get("parts", {})}
            if isinstance(data, dict)
            else data
        )

    @field_validator("metrics")
    @classmethod
    def _metric_names(cls, v):
        return metric_names(v)

    @model_validator(mode="after")
    def _row_lengths(self):
        for label, vals in self.rows.items():
            if len(vals) != len(self.metrics):
                raise ValueError(f"row {label!r} has {len(vals)} values for {len(self.metrics)} metrics")
        for c in self.contradicted:
            if c.row not in self.rows or c.metric not in self.metrics:
                raise ValueError(f"contradicted cell ({c.row!r}, {c.metric!r}) is not a row/metric of this reference")
        return self

    def is_contradicted(self, row: str, metric: str) -> str | None:
        """The reason a printed cell is contradicted by the paper, or None."""
        return next((c.reason for c in self.contradicted if c.row == row and c.metric == metric), None)


class Settings(JobSettings):
    """`defaults:` of a suite: the job settings plus the seeds to run each job with."""

    seeds: list[Seed] = Field(default_factory=lambda: [0], min_length=1)

    @field_validator("seeds")
    @classmethod
    def _each_once(cls, v):
        if twice := [seed for i, seed in enumerate(v) if seed in v[:i]]:
            raise ValueError(f"seed {twice[0]} is listed twice (each seed runs once)")
        return v


SETTINGS_FIELDS = set(Settings.model_fields)


class MethodOverride(Strict):
    """A dataset entry's settings for one of the suite's methods (a paper table that trains its methods
    differently); `server:` and `client:` are checked when laid over the method (fl/method.py)."""

    local: dict[str, Any] = Field(default_factory=dict, description="local-training settings, merged over the entry's")
    server: dict[str, Any] = Field(default_factory=dict, description="server rule parameters")
    client: dict[str, dict[str, Any]] = Field(default_factory=dict, description="client term -> parameters")


class DatasetEntry(JobData):
    """A dataset entry of a suite: a job's dataset, plus what the suite says of it (its reference, its
    methods' overrides) and overrides of any `defaults:` setting (every one optional, added below)."""

    reference: Reference | None = None
    method_overrides: dict[str, MethodOverride] = declared(
        default_factory=dict,
        identity=Identity.UNLESS_DEFAULT,
        description="per method label (as in `methods:`): `local:` settings and `server:`/`client:` parameters "
        "for this dataset entry only (a paper table that trains its methods differently)",
    )


def _override(annotation):
    """A dataset entry's form of a setting: optional; nested settings are partial mappings (merged)."""
    nested = any(isinstance(a, type) and issubclass(a, BaseModel) for a in (annotation, *get_args(annotation)))
    return (dict[str, Any] | None if nested else annotation | None, None)


DatasetEntry = create_model(
    "DatasetEntry",
    __base__=DatasetEntry,
    __doc__=DatasetEntry.__doc__,
    **{name: _override(f.annotation) for name, f in Settings.model_fields.items()},
)


class Suite(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="results/<name>/ and the MLflow experiment")
    description: str = ""
    extends: str | None = Field(None, description="the suite this one extends (suite/extends.py), relative to it")
    plugins: list[str] = Field(
        default_factory=list, description="modules on PYTHONPATH imported before validation (benchmark/plugins.py)"
    )
    defaults: Settings = Field(default_factory=Settings)
    datasets: list[DatasetEntry] = Field(min_length=1)
    methods: list[MethodEntry] = Field(min_length=1)
    grid: dict[str, list[Any]] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _stays_inside_results(cls, v):
        if set(v) == {"."}:  # "." or ".." would write into (or above) the results folder itself
            raise ValueError(f"{v!r} is not a folder name; use letters, digits, '_', '-' or '.'")
        return v
