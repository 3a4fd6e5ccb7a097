"""CIFAR-10 and CIFAR-100 in three layouts:

- pickle: the official python archive, `cifar-10-batches-py/{data_batch_1..5,test_batch}` or
  `cifar-100-python/{train,test}` (fine labels), extracted or as the .tar.gz;
- folder: `<folder>/{train,test}/<class>/*.{jpg,png}` (classes in sorted order), extracted or
  as `<folder>.tar.gz`;
- hf: a local Hugging Face copy under `<hf_dir>/`, or the hub id `hf_id` when online.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from benchmark.data.archive import Found, dataset_missing, expected, locate
from benchmark.data.cache import cache_key, cached_tensors
from benchmark.data.hf import has_local_copy, hf_split, open_hf
from benchmark.data.images import decode_images, image_folder, split_tensors
from benchmark.data.safe_pickle import safe_load_pickle
from benchmark.data.source import DATASETS, DatasetSpec, SourceData
from benchmark.errors import DatasetMissing
from benchmark.lazy import torch
from benchmark.params import StrictParams


@dataclass(frozen=True)
class CifarSpec:
    name: str
    num_classes: int
    pickle_dir: str
    train_files: tuple[str, ...]
    test_files: tuple[str, ...]
    label_key: str
    archive: str  # the official python archive's file name
    url: str
    folder: str  # default image-folder directory
    hf_id: str  # a hub id with this dataset (documented default, used only when asked)


CIFAR10 = CifarSpec(
    "cifar10",
    10,
    "cifar-10-batches-py",
    tuple(f"data_batch_{i}" for i in range(1, 6)),
    ("test_batch",),
    "labels",
    "cifar-10-python.tar.gz",
    "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
    "cifar10-jpeg",
    "uoft-cs/cifar10",
)
CIFAR100 = CifarSpec(
    "cifar100",
    100,
    "cifar-100-python",
    ("train",),
    ("test",),
    "fine_labels",
    "cifar-100-python.tar.gz",
    "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
    "cifar100-jpeg",
    "uoft-cs/cifar100",
)
SPECS = {s.name: s for s in (CIFAR10, CIFAR100)}


class CifarParams(StrictParams):
    format: Literal["auto", "pickle", "folder", "hf"] = "auto"
    folder: str | None = None  # image-folder directory under the root (default <name>-jpeg)
    hf_dir: str | None = None  # local Hugging Face copy under the root (default <name>-hf)
    hf_id: str | None = None  # hub id to download from when no local copy exists (online only)


def _help(spec: CifarSpec, p: CifarParams, root: Path | None) -> str:
    folder, hf_dir = p.folder or spec.folder, p.hf_dir or f"{spec.name}-hf"
    files = ",".join(spec.train_files + spec.test_files)
    lines = {
        "pickle": f"pickle: {expected(root, spec.pickle_dir, [spec.archive])} with {{{files}}} "
        f"(`fedbench data prepare {spec.name}` downloads {spec.url})",
        "folder": f"folder: {expected(root, folder, [folder + '.tar.gz'])} with {{train,test}}/<class>/*.jpg|png",
        "hf": f"hf: {expected(root, hf_dir)} (save_to_disk folder or parquet files), or params.hf_id "
        f"(e.g. {spec.hf_id}) when online",
    }
    return "\n  ".join(v for k, v in lines.items() if p.format in ("auto", k))


def find(spec: CifarSpec, p: CifarParams, root: Path | None) -> tuple[str, Found | str]:
    """(format, where): the first layout present, in the order pickle, folder, hf; for the hub
    the place is the hub id."""
    folder, hf_dir = p.folder or spec.folder, p.hf_dir or f"{spec.name}-hf"
    if p.format in ("auto", "pickle") and (found := locate(root, spec.pickle_dir, [spec.archive])):
        return "pickle", found
    if p.format in ("auto", "folder") and (found := locate(root, folder, [folder + ".tar.gz"])):
        return "folder", found
    if p.format in ("auto", "hf"):
        if root is not None and has_local_copy(root / hf_dir):
            return "hf", Found(root / hf_dir)
        if p.hf_id:
            return "hf", p.hf_id
    raise dataset_missing(
        f"dataset {spec.name!r} (format {p.format}): nothing found. Expected one of:\n  {_help(spec, p, root)}", root
    )


def _read_pickles(spec: CifarSpec, folder: Path, names: tuple[str, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        raise DatasetMissing(f"{spec.name}: {folder} lacks {', '.join(missing)} (expected {', '.join(names)})")
    xs, ys = [], []
    for n in names:
        batch = safe_load_pickle(folder / n)
        if not isinstance(batch, dict):
            raise DatasetMissing(f"{folder / n} holds a {type(batch).__name__}, expected a CIFAR batch dict")
        entry = {(k.decode() if isinstance(k, bytes) else k): v for k, v in batch.items()}
        try:
            data = torch.as_tensor(entry["data"]).to(torch.uint8).reshape(-1, 3, 32, 32)
            labels = torch.as_tensor(entry[spec.label_key], dtype=torch.long)
        except (KeyError, RuntimeError, TypeError, ValueError) as err:
            raise DatasetMissing(
                f"{folder / n}: not a CIFAR batch (needs 'data' N x 3072 and '{spec.label_key}'; {err})"
            ) from None
        if len(data) != len(labels):
            raise DatasetMissing(f"{folder / n}: {len(data)} images but {len(labels)} labels")
        xs.append(data), ys.append(labels)
    return torch.cat(xs), torch.cat(ys)


def _build(spec: CifarSpec, fmt: str, where: Found | str) -> dict[str, torch.Tensor]:
    if fmt == "pickle":
        train = _read_pickles(spec, where.path, spec.train_files)
        test = _read_pickles(spec, where.path, spec.test_files)
    elif fmt == "folder":
        base = where.path
        for split in ("train", "test"):
            if not (base / split).is_dir():
                raise DatasetMissing(f"{spec.name}: {split}/<class>/*.jpg is missing in {where.origin}")
        files, labels, classes = image_folder(base / "train")
        test_files, test_labels, _ = image_folder(base / "test", classes)
        train, test = (decode_images(files), labels), (decode_images(test_files), test_labels)
    else:
        source = where.path if isinstance(where, Found) else where
        dd = open_hf(source)
        train = hf_split(dd, ["train"], ["img", "image"], [spec.label_key, "label", "fine_label"], str(source))
        test = hf_split(dd, ["test"], ["img", "image"], [spec.label_key, "label", "fine_label"], str(source))
    tr, te = split_tensors(*train, with_stats=True), split_tensors(*test, with_stats=False)
    return {
        "train_x": tr["x"],
        "train_y": tr["y"],
        "test_x": te["x"],
        "test_y": te["y"],
        "mean": tr["mean"],
        "std": tr["std"],
    }


def load_cifar(spec: CifarSpec, p: CifarParams, root: Path | None) -> SourceData:
    fmt, where = find(spec, p, root)
    key = cache_key(spec.name, fmt, where.checksum() if isinstance(where, Found) else where)
    t = cached_tensors(spec.name, key, lambda: _build(spec, fmt, where))
    for split in ("train_y", "test_y"):
        bad = (t[split] < 0) | (t[split] >= spec.num_classes)
        if bad.any():
            raise DatasetMissing(
                f"{spec.name} ({fmt} at {where}): labels outside 0..{spec.num_classes - 1} in {split[:-2]}"
            )
    return SourceData(
        t["train_x"],
        t["train_y"],
        t["test_x"],
        t["test_y"],
        spec.num_classes,
        "image",
        mean=tuple(t["mean"].tolist()),
        std=tuple(t["std"].tolist()),
    )


def dataset_spec(spec: CifarSpec) -> DatasetSpec:
    return DatasetSpec(
        spec.name,
        lambda p, root: load_cifar(spec, p, root),
        f"{spec.name.upper().replace('CIFAR', 'CIFAR-')}: official python archive, an image folder or Hugging Face "
        "(docs/datasets.md)",
        CifarParams,
        lambda root: find(spec, CifarParams(), root)[1],
        downloads=((spec.url, spec.archive),),
    )


for _spec in SPECS.values():  # one file, two datasets of one family
    DATASETS.register(dataset_spec(_spec))
