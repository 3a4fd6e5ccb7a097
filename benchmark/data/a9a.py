"""LIBSVM a9a (UCI Adult, the FedAC paper's dataset): `<root>/a9a[.gz]` (train) and
`<root>/a9a.t[.gz]` (test), sparse text `label index:value ...` with 1-based indices.
Features become dense float32 (123 columns); labels ±1 become {0, 1}. Parsing the text takes
about 0.75 s, so the decoded arrays are cached (an .npz under the fedbench cache, keyed by the
source files' names, sizes and modification times): each machine parses a9a once."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
from pydantic import Field

from benchmark.data.archive import Found, dataset_missing, root_text
from benchmark.data.cache import cache_key, cached_arrays, files_fingerprint
from benchmark.data.source import DATASETS, DatasetSpec, SourceData
from benchmark.errors import DatasetMissing
from benchmark.params import StrictParams

A9A_HELP = (
    "Download a9a and a9a.t from www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html "
    "and put them (plain or .gz) at <root>/a9a and <root>/a9a.t."
)


class A9aParams(StrictParams):
    num_features: int = Field(123, ge=1)


def libsvm_file(root: Path | None, name: str) -> Path:
    """`<root>/<name>` or `<root>/<name>.gz`, else DatasetMissing naming both."""
    if root is not None:
        for candidate in (root / name, root / f"{name}.gz"):
            if candidate.is_file():
                return candidate
    where = root_text(root)
    raise dataset_missing(
        f"dataset 'a9a': expected {where}/{name} or {where}/{name}.gz, but neither is there.\n  {A9A_HELP}", root
    )


def read_libsvm(path: Path, num_features: int) -> tuple[np.ndarray, np.ndarray]:
    """(dense float32 features, raw labels as float) of a LIBSVM text file."""
    opener = gzip.open if path.suffix == ".gz" else open
    rows, cols, vals, labels = [], [], [], []
    try:
        with opener(path, "rt") as f:
            for line_no, line in enumerate(f, 1):
                parts = line.split()
                if not parts:
                    continue
                try:
                    labels.append(float(parts[0]))
                    for item in parts[1:]:
                        idx, val = item.split(":")
                        j = int(idx) - 1
                        if not 0 <= j < num_features:
                            raise ValueError(f"feature index {idx} outside 1..{num_features}")
                        rows.append(len(labels) - 1), cols.append(j), vals.append(float(val))
                except ValueError as err:
                    raise DatasetMissing(f"{path}:{line_no}: not LIBSVM text ({err})") from None
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise DatasetMissing(f"cannot read {path}: {type(err).__name__}: {err}") from None
    if not labels:
        raise DatasetMissing(f"{path} has no examples")
    x = np.zeros((len(labels), num_features), dtype=np.float32)
    x[rows, cols] = vals
    return x, np.array(labels)


def to_binary(y: np.ndarray, path: Path) -> np.ndarray:
    if not ((y == 1) | (y == -1)).all():
        raise DatasetMissing(f"{path}: labels must be +1/-1, found {sorted(set(y.tolist()))[:5]}")
    return (y > 0).astype(np.int64)


def decoded_a9a(p: A9aParams, root: Path | None) -> dict[str, np.ndarray]:
    """train_x, train_y, test_x, test_y as numpy arrays, parsed once and then read from the cache."""
    train_path, test_path = libsvm_file(root, "a9a"), libsvm_file(root, "a9a.t")

    def parse() -> dict[str, np.ndarray]:
        train_x, train_y = read_libsvm(train_path, p.num_features)
        test_x, test_y = read_libsvm(test_path, p.num_features)
        arrays = dict(
            train_x=train_x, train_y=to_binary(train_y, train_path), test_x=test_x, test_y=to_binary(test_y, test_path)
        )
        # the arrays' fingerprint, stored beside them: every read of the .npz checks each array's CRC-32, so
        # a run records it without hashing 24 MB again (18 ms a process)
        return {**arrays, "fingerprint": np.array(as_source(arrays).fingerprint())}

    # the key: both files' absolute names, sizes and modification times (a changed file is parsed again)
    fingerprint = files_fingerprint((train_path.resolve(), test_path.resolve()), Path("/"))
    return cached_arrays("a9a", cache_key(fingerprint, p.num_features, A9A_CACHE_LAYOUT), parse)


A9A_CACHE_LAYOUT = 2  # bump when decoding changes, so older cached copies are not read (2: with the fingerprint)


def as_source(a: dict[str, np.ndarray]) -> SourceData:
    return SourceData(*(a[name] for name in ("train_x", "train_y", "test_x", "test_y")), 2, "vector")


def load_a9a(p: A9aParams, root: Path | None) -> SourceData:
    """numpy arrays: the FedAc protocol's engine runs on them without torch (SourceData.tensors for the rest)."""
    a = decoded_a9a(p, root)
    src = as_source(a)
    src.stored_fingerprint = str(a["fingerprint"])
    return src


def probe_a9a(root: Path | None) -> Found:
    return Found(libsvm_file(root, "a9a"), also=(libsvm_file(root, "a9a.t"),))


LIBSVM = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary"
DATASETS.register(
    DatasetSpec(
        "a9a",
        load_a9a,
        A9A_HELP,
        A9aParams,
        probe_a9a,
        downloads=((f"{LIBSVM}/a9a", "a9a"), (f"{LIBSVM}/a9a.t", "a9a.t")),
    )
)
