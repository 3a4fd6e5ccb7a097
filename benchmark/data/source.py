"""Dataset sources: a registry of dataset specs whose loaders turn local files (or a recipe) into tensors.

A loader returns a `SourceData`: whole train/test splits as tensors (uint8 images stay uint8;
the device-side pipeline normalises them), plus, for datasets with natural users (LEAF), the
user id of every training and test example (the test users give per-client accuracy).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from benchmark.data.archive import dataset_missing, root_text
from benchmark.errors import DataInvalid
from benchmark.lazy import torch
from benchmark.registry import Registry

DATA_ENV = "FEDBENCH_DATA"


@dataclass
class SourceData:
    """Tensors, or numpy arrays from a loader that needs no torch (a9a): `tensors()` gives torch's."""

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
    # (n_test,) int user index of each test example, natural splits only: the final round's accuracy per
    # client; not in `fingerprint` (it groups the test examples, it changes none)
    test_users: torch.Tensor | None = None
    # `fingerprint()` as a loader found it stored with these very arrays (a9a's decoded copy, read back
    # CRC-checked): not an init field, so `replace` (new arrays) never carries it over
    stored_fingerprint: str | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.train_x.shape[1:])

    def problems(self) -> list[str]:
        """What makes these tensors unusable for training; empty when they are fine."""
        found = []
        for split in ("train", "test"):
            x, y = getattr(self, f"{split}_x"), getattr(self, f"{split}_y")
            if len(x) == 0:
                found.append(f"the {split} split is empty")
            if len(x) != len(y):
                found.append(f"{split}: {len(x)} inputs but {len(y)} labels")
            if _kind(y) != "integer":
                found.append(f"{split} labels are {y.dtype}, not integers")
            elif len(y) and (int(y.min()) < 0 or int(y.max()) >= self.num_classes):
                bad = int(np.flatnonzero(np.asarray((y < 0) | (y >= self.num_classes)))[0])
                found.append(f"{split} label {int(y[bad])} (example {bad}) is outside 0..{self.num_classes - 1}")
            if _kind(x) == "float" and not bool((np if isinstance(x, np.ndarray) else torch).isfinite(x).all()):
                found.append(f"{split} inputs hold NaN or infinite values")
        if self.train_x.shape[1:] != self.test_x.shape[1:]:
            found.append(
                f"train inputs are {tuple(self.train_x.shape[1:])} but test inputs {tuple(self.test_x.shape[1:])}"
            )
        if self.train_users is not None and len(self.train_users) != len(self.train_y):
            found.append(f"{len(self.train_users)} user ids for {len(self.train_y)} training examples")
        if self.test_users is not None and len(self.test_users) != len(self.test_y):
            found.append(f"{len(self.test_users)} user ids for {len(self.test_y)} test examples")
        return found

    def fingerprint(self) -> str:
        """sha256 of the tensors themselves: what a job trained on, whatever files they came from."""
        if self.stored_fingerprint:
            return self.stored_fingerprint
        h = hashlib.sha256()
        for t in (self.train_x, self.train_y, self.test_x, self.test_y, self.train_users):
            if isinstance(t, np.ndarray):  # the bytes and names torch's tensor of it would give
                h.update(f"torch.{t.dtype}{tuple(t.shape)}".encode())
                h.update(np.ascontiguousarray(t))  # its buffer: the same bytes as .tobytes(), without a copy
            elif t is not None:
                t = t.contiguous().cpu()
                h.update(f"{t.dtype}{tuple(t.shape)}".encode())
                h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        h.update(f"{self.num_classes}".encode())
        return h.hexdigest()[:16]

    def tensors(self) -> SourceData:
        """These data with torch tensors in place of numpy arrays (sharing their memory)."""
        names = ("train_x", "train_y", "test_x", "test_y", "train_users", "test_users")
        arrays = {n: torch.from_numpy(v) for n in names if isinstance(v := getattr(self, n), np.ndarray)}
        return replace(self, **arrays) if arrays else self


def _kind(t) -> str:
    """ "float", "integer" or "other" (complex, bool) of a tensor's or an array's dtype."""
    if isinstance(t, np.ndarray):
        return {"f": "float", "i": "integer", "u": "integer"}.get(t.dtype.kind, "other")
    if t.is_floating_point():
        return "float"
    return "other" if t.is_complex() or t.dtype == torch.bool else "integer"


class NoParams(BaseModel):
    """For datasets that take no `params:`."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class RawBuild:
    """How `fedbench data prepare` builds a dataset's files from raw material in the data root."""

    find: Callable[[Path | None], Path | None]  # the raw material under the root; None: not there
    build: Callable[[Path, Path, dict], dict]  # (raw, dest, prepare's options) -> statistics to print
    needs: str  # what raw material to put in the root, for the error when it is missing


@dataclass(frozen=True)
class DatasetSpec:
    """Everything fedbench knows about one dataset. A dataset file defines one and registers it
    with `DATASETS.register(DatasetSpec(...))`; a read of its name imports its file (listed in
    benchmark/builtin_names.py) or every module of benchmark.data, so a new dataset is one file."""

    name: str
    load: Callable[[Any, Path | None], SourceData]  # (validated params, data root or None) -> tensors
    help: str = ""  # what to download and put where, shown when the files are missing
    params: type[BaseModel] = NoParams  # the `params:` a suite may give (checked when it is expanded)
    probe: Callable[[Path | None], Any] | None = None  # root -> archive.Found (or a hub id) without
    # loading, raising DatasetMissing; None: generated from params, no files (`fedbench data ls`)
    downloads: tuple[tuple[str, str], ...] = ()  # (official URL, file name under the root): `data prepare`
    raw_build: RawBuild | None = None  # or: `data prepare` builds the files from raw material


DATASETS: Registry[DatasetSpec] = Registry("dataset", "benchmark.data")


def load_dataset(name: str, params: dict, root: Path | None) -> SourceData:
    """Dataset `name` with `params` (pydantic.ValidationError when they are invalid) from `root`."""
    spec = DATASETS.require(name)
    return spec.load(spec.params(**params), root)


def data_root(explicit: str | None) -> Path | None:
    """The directory datasets are looked up in: the suite's `root:`, else $FEDBENCH_DATA."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(DATA_ENV)
    return Path(env).expanduser() if env else None


def require_dir(path: Path | None, dataset: str, expected: str) -> Path:
    """`path` if it is an existing directory, else a DatasetMissing naming what goes where."""
    if path is None or not path.is_dir():
        help_text = DATASETS.get(dataset).help if dataset in DATASETS else ""
        raise dataset_missing(
            f"dataset {dataset!r}: expected {expected} under {root_text(path)}, but it is not there."
            + (f"\n  {help_text}" if help_text else ""),
            path,
        )
    return path


def check_source(src: SourceData, dataset: str, where: str) -> SourceData:
    """`src` if it can be trained on, else a DataInvalid naming the dataset and its files."""
    if found := src.problems():
        raise DataInvalid(f"dataset {dataset!r} ({where}): " + "; ".join(found) + "\n  fix or replace these files")
    return src
