"""One resolved job, as suite/expand.py builds it from a suite and the engine runs it: its settings
(job/settings.py), the dataset it trains on, its method and its seed; nothing of the suite besides.

Its canonical JSON is hashed into the job id (suite/expand.job_id), so anything that changes the
trajectory changes the id. Each field's part in that identity is declared with it (`declared(...,
identity=...)`, params.Identity): what only says how or where a job runs, or what it reports, is NEVER
part of it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator

from benchmark.fl.spec import MethodSpec
from benchmark.job.settings import AugmentConfig, JobSettings, Seed, SplitConfig, Strict
from benchmark.metrics import evaluated_round
from benchmark.params import Identity, declared

# Job ids began when a job's dataset was its whole suite entry, whose copies of these settings (merged
# into the job's own by expand) were null in every job and hashed as null: a job's dataset keeps them
# in its identity, and only there, so that every job id stands.
HASHED_AS_NULL = (
    "checkpoint_every",
    "checkpoint_minutes",
    "client_state",
    "eval_every",
    "execution",
    "local",
    "metrics",
    "model",
    "num_clients",
    "participation",
    "precision",
    "rounds",
    "seeds",
    "suboptimality",
    "vmap_chunk",
)
# what a config.json written before JobData holds in its dataset besides JobData's fields: the entry's
# copy of each setting (null) and its reference (the report's, never the job's)
_FORMER_KEYS = {*JobSettings.model_fields, "seeds", "reference"}


class JobData(Strict):
    """The dataset a job trains on, as its suite entry names it (suite/schema.DatasetEntry adds the rest)."""

    identity_constants: ClassVar[dict[str, Any]] = dict.fromkeys(HASHED_AS_NULL)  # params.identity_members

    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    root: str | None = declared(
        None, identity=Identity.NEVER, description="where the files are; default $FEDBENCH_DATA"
    )
    uri: str | None = declared(
        None,
        identity=Identity.NEVER,
        description="Ray: where nodes without the files fetch them (file://, https://, fsspec; #sha256=<hex> pins them)",
    )
    split: SplitConfig = Field(default_factory=SplitConfig)
    augment: AugmentConfig = Field(default_factory=AugmentConfig)
    label: str | None = declared(None, identity=Identity.NEVER)

    @field_validator("uri")
    @classmethod
    def _fetchable(cls, v):
        if v is not None:
            from benchmark.data.uri import parse_data_uri

            parse_data_uri(v)  # a ValueError becomes a problem at this YAML path
        return v


class JobConfig(JobSettings):
    """One resolved job; its id hashes `identity_dump` of it (params.py)."""

    dataset: JobData
    method: MethodSpec
    seed: Seed

    @model_validator(mode="before")
    @classmethod
    def _read_former_dataset(cls, data):
        """A config.json written before JobData (store/old_layout.py reads them) has the former keys."""
        dataset = data.get("dataset") if isinstance(data, dict) else None
        if isinstance(dataset, dict) and _FORMER_KEYS & set(dataset):
            former = {k for k in _FORMER_KEYS & set(dataset) if dataset[k] is None or k == "reference"}
            data = {**data, "dataset": {k: v for k, v in dataset.items() if k not in former}}
        return data

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
