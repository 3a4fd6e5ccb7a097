"""The suite file format (pydantic). A suite = defaults + datasets + methods (+ grid, reference).

`JobConfig` is one fully resolved job; its canonical JSON is hashed into the job id, so anything
that changes the trajectory changes the id. Each field's part in that identity is declared here
with it (`declared(..., identity=...)`, params.Identity): what only says how or where a job runs,
or what it reports, is NEVER part of it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from benchmark.fl.base import LrSchedule
from benchmark.fl.spec import MethodEntry, MethodSpec
from benchmark.metrics import evaluated_round, parse_metric
from benchmark.params import Identity, declared


class Strict(BaseModel):
    # strict: a YAML `true` is no number and `"5"` no integer; no inf/nan where a float is expected
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


# numpy's and torch's seed range in common use; a larger seed overflowed deep inside a job
Seed = Annotated[int, Field(ge=0, lt=2**32, description="0 <= seed < 2^32")]

# Upper bounds on counts (docs/suites.md, "Limits"): far above any published protocol (FedAc: 4,096
# rounds, 8,192 workers; FedACG: 4,000 rounds), so what exceeds one is a typo or a slipped unit
# (`rounds: 10^30` was accepted, its ETA 4·10^21 h), refused at plan with its path and limit.
MAX_ROUNDS = 1_000_000
MAX_CLIENTS = 10_000_000
MAX_EPOCHS = 10_000
MAX_STEPS = 1_000_000
MAX_BATCH = 1_000_000


class LocalTraining(Strict):
    epochs: int | None = Field(5, ge=1, le=MAX_EPOCHS, description="local epochs E (exclusive with steps)")
    steps: int | None = Field(None, ge=1, le=MAX_STEPS, description="local steps K (exclusive with epochs)")
    batch_size: int = Field(50, ge=1, le=MAX_BATCH)
    lr: float = Field(0.1, gt=0, description="η_0")
    lr_decay: float = Field(1.0, gt=0, le=1, description="round decay d: η_t = η_0 d^t")
    intra_round_decay: bool = Field(False, description="official code: also decay by d^epoch inside a round")
    weight_decay: float = Field(1e-3, ge=0)
    clip_norm: float | None = Field(10.0, gt=0, description="global L2 clip of the loss gradient; null = off")

    @model_validator(mode="after")
    def _one_budget(self):
        if self.steps is not None and "epochs" not in self.model_fields_set:
            self.epochs = None
        if (self.epochs is None) == (self.steps is None):
            raise ValueError("give exactly one of local.epochs or local.steps")
        return self

    @property
    def lr_schedule(self) -> LrSchedule:
        return LrSchedule(self.lr, self.lr_decay, self.intra_round_decay)


class PoolConfig(Strict):
    """Dynamic client pool (FedACG Table 3)."""

    size: int = Field(ge=1, le=MAX_CLIENTS, description="C: clients in the candidate pool")
    every: int = Field(100, ge=1, le=MAX_ROUNDS, description="P: rounds between pool changes")
    mode: Literal["resample", "replace"] = Field(
        "resample",
        description="resample: draw a new pool of C out of N; replace: each member replaced w.p. replace_prob",
    )
    replace_prob: float = Field(0.5, ge=0, le=1)
    reset_state: bool = Field(True, description="clients joining the pool start from empty client state")


class Participation(Strict):
    mode: Literal["fixed", "bernoulli"] = "fixed"
    rate: float = Field(0.1, gt=0, le=1, description="fixed: M = round(rate·N) per round; bernoulli: P(active)")
    pool: PoolConfig | None = None
    relative_to: Literal["all", "pool"] = declared(
        "all",
        identity=Identity.UNLESS_DEFAULT,
        description="with a pool, fixed mode: M = round(rate·N) (all) or round(rate·pool size) (pool)",
    )

    @model_validator(mode="after")
    def _pool_needed(self):
        if self.relative_to == "pool" and self.pool is None:
            raise ValueError("relative_to: pool needs a pool (participation.pool)")
        return self


class SplitConfig(Strict):
    kind: Literal["iid", "dirichlet", "dirichlet_unbalanced", "natural", "shared"] = Field(
        "iid", description="shared: every client samples each batch with replacement from the whole training set"
    )
    alpha: float | None = Field(None, gt=0, description="Dirichlet concentration")
    seed: Seed = Field(0, description="split seed (independent of the training seed)")
    select: Literal["first", "random"] = Field("first", description="natural splits: which users become clients")
    min_size: int = Field(10, ge=1, description="dirichlet_unbalanced: minimum client size")
    samples: Literal["fedbench", "authors_numpy"] = declared(
        "fedbench",
        identity=Identity.UNLESS_DEFAULT,  # added after shared-split jobs existed: their ids stand
        description="kind shared: which stream draws the examples. fedbench: its own (seed, round) stream; "
        "authors_numpy: the FedAc authors' logistic.py, numpy's legacy generator at the job's seed after "
        "model.init normal_numpy's w0, one draw of M*batch per local step, in float64 (docs/reproductions/fedac/replay)",
    )

    @model_validator(mode="after")
    def _alpha_needed(self):
        if self.kind.startswith("dirichlet") and self.alpha is None:
            raise ValueError(f"split kind {self.kind!r} needs alpha (e.g. alpha: 0.3)")
        if self.samples != "fedbench" and self.kind != "shared":
            raise ValueError(f"samples: {self.samples} draws from a shared split only (kind: shared)")
        return self


class AugmentConfig(Strict):
    """Training-time augmentation, run batched on the device (test data is never augmented)."""

    crop_padding: int = Field(0, ge=0, description="random crop after zero-padding by this many pixels (CIFAR: 4)")
    flip: bool = Field(False, description="random horizontal flip")
    rotate_degrees: float = Field(0.0, ge=0, description="random rotation in ±degrees (FedACG code: 10)")


class SelectConfig(Strict):
    """What a grid's setting is selected on: the test set the table reports (the papers' protocol),
    or a validation split held out of each client's training data (engine/holdout.py)."""

    on: Literal["test", "validation"] = "test"
    holdout: float = Field(0.1, gt=0, lt=1, description="validation: the fraction of each client's data held out")

    @model_validator(mode="after")
    def _holdout_needs_validation(self):
        if self.on == "test" and "holdout" in self.model_fields_set:
            raise ValueError("select.holdout applies to `on: validation`; on the test set nothing is held out")
        return self


class ModelConfig(Strict):
    name: str = "logistic"
    init: Literal["default", "zeros", "normal", "normal_numpy"] = Field(
        "default",
        description="default: the model's own init (seeded); zeros; normal: every weight ~ N(0, 1) (seeded); "
        "normal_numpy: the flat weights ~ N(0, 1) as numpy.random.RandomState(seed).randn draws them (the FedAc "
        "authors' w0: their seed 1 is their released runs' w0)",
    )
    params: dict[str, Any] = Field(default_factory=dict)


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


class AuthorsRuns(Strict):
    """Reference values from the authors' released runs of a FedAc-protocol figure (per dataset
    entry, i.e. per K): for each method and number of workers M, their best final F(w) − F* over
    η and that η. Carried in the suite so that a clone without the authors' files reports them."""

    source: str = Field(description="the authors' file the values come from")
    f_star: float = Field(description="F* the suboptimality is measured from (fedbench's Newton solve)")
    # a pair as YAML writes it (a list: strict validation takes no list for a tuple)
    best: dict[str, dict[int, Annotated[list[float], Field(min_length=2, max_length=2)]]] = Field(
        description="method -> M -> [best final F − F*, its η]"
    )
    not_compared: dict[str, str] = Field(
        default_factory=dict, description="method -> why its values are shown but never compared"
    )


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
    authors: AuthorsRuns | None = Field(None, description="the authors' released runs (FedAc figures)")

    @field_validator("metrics")
    @classmethod
    def _metric_names(cls, v):
        for m in v:
            parse_metric(m)
        return v

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


class JobSettings(Strict):
    """Every setting of a job besides its dataset, method and seed, declared once: `defaults:` of a
    suite (Settings), a dataset entry's overrides (DatasetEntry, every field optional) and a
    resolved job (JobConfig) are all built from it."""

    rounds: int = Field(100, ge=1, le=MAX_ROUNDS)
    eval_every: int = Field(1, ge=1, le=MAX_ROUNDS)
    num_clients: int = Field(100, ge=1, le=MAX_CLIENTS)
    participation: Participation = Field(default_factory=Participation)
    local: LocalTraining = Field(default_factory=LocalTraining)
    model: ModelConfig = Field(default_factory=ModelConfig)
    metrics: list[str] = declared(
        default_factory=list, identity=Identity.NEVER, description="extra acc@R / acc_raw@R / rounds_to@X to report"
    )
    precision: Literal["fp32", "bf16", "fp16"] = "fp32"
    checkpoint_every: int = declared(
        0, identity=Identity.NEVER, ge=0, description="rounds between resume checkpoints; 0 = none"
    )
    checkpoint_minutes: float = declared(
        5.0,
        identity=Identity.NEVER,
        ge=0,
        description="also write a resume checkpoint when this many minutes passed since the last; 0 = off",
    )
    execution: Literal["sequential", "vectorised", "auto"] = declared(
        "sequential",
        identity=Identity.NEVER,
        description="train a round's clients one by one, or together (client-batched kernels / "
        "torch.func.vmap; same numbers), or auto: the first round times both and the job keeps the faster",
    )
    client_state: Literal["memory", "memmap"] = declared(
        "memory",
        identity=Identity.NEVER,
        description="where per-client state lives: host memory, or memory-mapped files in the job's folder",
    )
    vmap_chunk: int | None = declared(
        None,
        identity=Identity.NEVER,
        ge=1,
        description="execution: vectorised trains at most this many clients per vmap call (bounds memory); "
        "None: chosen from the memory one client's step takes (engine/vmap_chunk.py)",
    )
    compile: bool = declared(
        False,
        identity=Identity.NEVER,
        description="torch.compile the model's forward and backward (CUDA: with CUDA graphs); sequential execution only",
    )
    log_model: bool = declared(
        False,
        identity=Identity.NEVER,
        description="attach the finished job's final_model.pt (its state_dict) to its MLflow run, under model/",
    )
    select: SelectConfig = declared(
        default_factory=SelectConfig,
        identity=Identity.UNLESS_DEFAULT,  # test-selected jobs (the default) keep their ids
        description="on: validation holds out `holdout` of each client's training data and selects grids on it",
    )
    suboptimality: bool = declared(
        False,
        identity=Identity.UNLESS_DEFAULT,
        description="convex jobs (logistic model): record subopt = F(w) − F* of the evaluated model each eval",
    )

    @field_validator("metrics")
    @classmethod
    def _metric_names(cls, v):
        return Reference._metric_names(v)

    @model_validator(mode="after")
    def _compile_sequential(self):
        if self.compile and self.execution != "sequential":
            raise ValueError("compile: true compiles the sequential local step; use execution: sequential")
        return self


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


class DatasetEntry(Strict):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    root: str | None = declared(
        None, identity=Identity.NEVER, description="where the files are; default $FEDBENCH_DATA"
    )
    uri: str | None = declared(
        None,
        identity=Identity.NEVER,
        description="Ray: where nodes without the files fetch them (file://, https://, "
        "fsspec; #sha256=<hex> pins them)",
    )
    split: SplitConfig = Field(default_factory=SplitConfig)
    augment: AugmentConfig = Field(default_factory=AugmentConfig)
    label: str | None = declared(None, identity=Identity.NEVER)
    reference: Reference | None = declared(None, identity=Identity.NEVER)
    method_overrides: dict[str, MethodOverride] = declared(
        default_factory=dict,
        identity=Identity.UNLESS_DEFAULT,
        description="per method label (as in `methods:`): `local:` settings and `server:`/`client:` parameters "
        "for this dataset entry only (a paper table that trains its methods differently)",
    )

    @field_validator("uri")
    @classmethod
    def _fetchable(cls, v):
        if v is not None:
            from benchmark.data.uri import parse_data_uri

            parse_data_uri(v)  # a ValueError becomes a problem at this YAML path
        return v

    # and every Settings field, optional, merged over `defaults:` (added below)


# A dataset entry's copy of a setting is null in every job (expand merges it into the setting) and
# hashed as null, as since job ids began; the copies of `compile`, `select` and `log_model`, added later, are left
# out instead.
COPY_IDENTITY = {"compile": Identity.NEVER, "select": Identity.NEVER, "log_model": Identity.NEVER}


def _override(name: str, annotation):
    """A dataset entry's form of a setting: optional; nested settings are partial mappings (merged)."""
    nested = any(isinstance(a, type) and issubclass(a, BaseModel) for a in (annotation, *get_args(annotation)))
    kind = dict[str, Any] | None if nested else annotation | None
    return (kind, declared(None, identity=COPY_IDENTITY.get(name, Identity.ALWAYS)))


DatasetEntry = create_model(
    "DatasetEntry",
    __base__=DatasetEntry,
    __doc__=DatasetEntry.__doc__,
    **{name: _override(name, f.annotation) for name, f in Settings.model_fields.items()},
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


class JobConfig(JobSettings):
    """One resolved job; its id hashes `identity_dump` of it (params.py)."""

    dataset: DatasetEntry
    method: MethodSpec
    seed: Seed

    @model_validator(mode="after")
    def _authors_samples_follow_their_w0(self):
        # their stream is what numpy's generator draws after w0: the job must draw w0 there first
        if self.dataset.split.samples == "authors_numpy" and self.model.init != "normal_numpy":
            raise ValueError(
                "split samples: authors_numpy continues the generator that drew w0: set model.init: normal_numpy"
            )
        return self

    def evaluates(self, r: int) -> bool:
        """Whether round r (1-based) is evaluated: only where a metric needs it (metrics.evaluated_round)."""
        return evaluated_round(r, self.rounds, self.eval_every, self.metrics)
