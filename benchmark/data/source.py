"""Dataset sources: a registry of loaders that turn local files (or a recipe) into tensors.

A loader returns a `SourceData`: whole train/test splits as tensors (uint8 images stay uint8;
the device-side pipeline normalises them), plus, for datasets with natural users (LEAF), the
user id of every training example.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from pydantic import BaseModel, ConfigDict

from benchmark.errors import DataInvalid, DatasetMissing

if TYPE_CHECKING:  # torch is imported where tensors are touched: `fedbench --help` and `plan` stay fast
    import torch

DATA_ENV = "FEDBENCH_DATA"


@dataclass
class SourceData:
    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor
    num_classes: int
    kind: str  # "vector" | "image" | "sequence"
    train_users: torch.Tensor | None = None  # (n_train,) int user index, natural splits only
    user_names: list[str] = field(default_factory=list)
    mean: tuple[float, ...] | None = None  # per-channel normalisation for uint8 images
    std: tuple[float, ...] | None = None

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.train_x.shape[1:])

    def problems(self) -> list[str]:
        """What makes these tensors unusable for training; empty when they are fine."""
        import torch

        found = []
        for split in ("train", "test"):
            x, y = getattr(self, f"{split}_x"), getattr(self, f"{split}_y")
            if len(x) == 0:
                found.append(f"the {split} split is empty")
            if len(x) != len(y):
                found.append(f"{split}: {len(x)} inputs but {len(y)} labels")
            if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
                found.append(f"{split} labels are {y.dtype}, not integers")
            elif len(y) and (int(y.min()) < 0 or int(y.max()) >= self.num_classes):
                bad = ((y < 0) | (y >= self.num_classes)).nonzero()[0].item()
                found.append(f"{split} label {int(y[bad])} (example {bad}) is outside 0..{self.num_classes - 1}")
            if x.is_floating_point() and not bool(torch.isfinite(x).all()):
                found.append(f"{split} inputs hold NaN or infinite values")
        if self.train_x.shape[1:] != self.test_x.shape[1:]:
            found.append(f"train inputs are {tuple(self.train_x.shape[1:])} but test inputs {tuple(self.test_x.shape[1:])}")
        if self.train_users is not None and len(self.train_users) != len(self.train_y):
            found.append(f"{len(self.train_users)} user ids for {len(self.train_y)} training examples")
        return found

    def fingerprint(self) -> str:
        """sha256 of the tensors themselves: what a job trained on, whatever files they came from."""
        import torch

        h = hashlib.sha256()
        for t in (self.train_x, self.train_y, self.test_x, self.test_y, self.train_users):
            if t is not None:
                t = t.contiguous().cpu()
                h.update(f"{t.dtype}{tuple(t.shape)}".encode())
                h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        h.update(f"{self.num_classes}".encode())
        return h.hexdigest()[:16]


Loader = Callable[[dict, "Path | None"], SourceData]
DATASETS: dict[str, Loader] = {}
DATASET_HELP: dict[str, str] = {}
DATASET_PARAMS: dict[str, type[BaseModel]] = {}


class NoParams(BaseModel):
    """For datasets that take no `params:`."""

    model_config = ConfigDict(extra="forbid")
# name -> probe(root) -> where the files were found (raises DatasetMissing); for `fedbench data ls`
DATASET_PROBES: dict[str, Callable] = {}


def register_dataset(name: str, help_missing: str = "", params: type[BaseModel] | None = None):
    """Register `loader(params, root) -> SourceData`; `help_missing` says what to download where;
    `params` is the pydantic model of its `params:` (checked when a suite is expanded)."""

    def deco(fn: Loader) -> Loader:
        if name in DATASETS:
            raise ValueError(f"dataset {name!r} registered twice")
        DATASETS[name] = fn
        DATASET_HELP[name] = help_missing
        DATASET_PARAMS[name] = params or NoParams
        return fn

    return deco


def known_datasets() -> list[str]:
    import benchmark.data.zoo  # noqa: F401  (registers every dataset)

    return sorted(DATASETS)


def register_probe(name: str):
    """Register `probe(root) -> archive.Found` that locates a dataset's files without loading them."""

    def deco(fn: Callable) -> Callable:
        DATASET_PROBES[name] = fn
        return fn

    return deco


def data_root(explicit: str | None) -> Path | None:
    """The directory datasets are looked up in: the suite's `root:`, else $FEDBENCH_DATA."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(DATA_ENV)
    return Path(env).expanduser() if env else None


def require_dir(path: Path | None, dataset: str, expected: str) -> Path:
    """`path` if it is an existing directory, else a DatasetMissing naming what goes where."""
    if path is None or not path.is_dir():
        where = str(path) if path is not None else f"${DATA_ENV} (unset) or the dataset's 'root:'"
        help_text = DATASET_HELP.get(dataset, "")
        raise DatasetMissing(
            f"dataset {dataset!r}: expected {expected} under {where}, but it is not there."
            + (f"\n  {help_text}" if help_text else "")
        )
    return path


def check_source(src: SourceData, dataset: str, where: str) -> SourceData:
    """`src` if it can be trained on, else a DataInvalid naming the dataset and its files."""
    if found := src.problems():
        raise DataInvalid(f"dataset {dataset!r} ({where}): " + "; ".join(found) + "\n  fix or replace these files")
    return src
