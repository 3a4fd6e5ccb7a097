"""What a job trains with besides its dataset, method and seed: the sections of its settings
(local training, participation, split, augmentation, selection, model) and `JobSettings`, declared
once. A suite's `defaults:`, a dataset entry's overrides and a resolved job (job/config.py) are all
built from them; each field's part in a job's identity is declared here with it (params.Identity).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from benchmark.fl.base import LrSchedule
from benchmark.metrics import parse_metric
from benchmark.models.inits import check_init
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
    init: str = Field(
        "default",
        description="default: the model's own init (seeded); zeros; normal: every weight ~ N(0, 1) (seeded); "
        "or one a protocol registers (models/inits.py; FedAc's normal_numpy: the authors' w0)",
    )
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("init")
    @classmethod
    def _registered_init(cls, v):
        return check_init(v)


def metric_names(names: list[str]) -> list[str]:
    """`names`, each parsed as a metric (an unknown one is a ValueError)."""
    for name in names:
        parse_metric(name)
    return names


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
        return metric_names(v)

    @model_validator(mode="after")
    def _compile_sequential(self):
        if self.compile and self.execution != "sequential":
            raise ValueError("compile: true compiles the sequential local step; use execution: sequential")
        return self
