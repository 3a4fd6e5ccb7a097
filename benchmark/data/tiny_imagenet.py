"""Tiny-ImageNet-200 (64x64, 200 classes). The official layout

    tiny-imagenet-200/wnids.txt
    tiny-imagenet-200/train/<wnid>/images/*.JPEG          (500 per class)
    tiny-imagenet-200/val/val_annotations.txt             (file <tab> wnid <tab> box)
    tiny-imagenet-200/val/images/*.JPEG                   (50 per class)

extracted, or as tiny-imagenet-200.zip / .tar.gz (or the val-only tiny-imagenet-200-val.tar.gz),
or a Hugging Face copy. As in the papers, val is the test set. Classes are the sorted wnids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from benchmark.data.archive import Found, dataset_missing, expected, locate
from benchmark.data.cache import cache_key, cached_tensors, files_fingerprint
from benchmark.data.hf import has_local_copy, hf_split, open_hf
from benchmark.data.images import IMAGE_SUFFIXES, decode_images, split_tensors
from benchmark.data.source import DATASETS, DatasetSpec, SourceData
from benchmark.errors import DatasetMissing
from benchmark.lazy import torch
from benchmark.params import StrictParams

DIR = "tiny-imagenet-200"
ARCHIVES = ["tiny-imagenet-200.zip", "tiny-imagenet-200.tar.gz", "tiny-imagenet-200-val.tar.gz"]
HF_ID = "zh-plus/tiny-imagenet"
NUM_CLASSES = 200
URL = "http://cs231n.stanford.edu/tiny-imagenet-200.zip"
HELP = f"Download {URL} and put it (or its extracted tiny-imagenet-200/ folder) under <root>/."


class TinyImageNetParams(StrictParams):
    format: Literal["auto", "folder", "hf"] = "auto"
    hf_dir: str = "tiny-imagenet-hf"  # local Hugging Face copy under the root
    hf_id: str | None = None  # hub id (e.g. zh-plus/tiny-imagenet) to download from when online


def find(p: TinyImageNetParams, root: Path | None) -> Found | str:
    if p.format in ("auto", "folder") and (found := locate(root, DIR, ARCHIVES)):
        return found
    if p.format in ("auto", "hf"):
        if root is not None and has_local_copy(root / p.hf_dir):
            return Found(root / p.hf_dir)
        if p.hf_id:
            return p.hf_id
    raise dataset_missing(
        f"dataset 'tiny_imagenet': nothing found. Expected {expected(root, DIR, ARCHIVES)} with wnids.txt, "
        f"train/<wnid>/images/*.JPEG, val/val_annotations.txt and val/images/*.JPEG; or a Hugging Face copy at "
        f"{expected(root, p.hf_dir)}, or params.hf_id (e.g. {HF_ID}) when online.\n  {HELP}",
        root,
    )


def wnids(base: Path) -> list[str]:
    path = base / "wnids.txt"
    if not path.is_file():
        raise DatasetMissing(f"tiny_imagenet: {path} is missing (one wnid per line)")
    names = sorted({line.strip() for line in path.read_text().splitlines() if line.strip()})
    if len(names) != NUM_CLASSES:
        raise DatasetMissing(f"{path} lists {len(names)} classes, expected {NUM_CLASSES}")
    return names


def split_files(
    base: Path, split: Literal["train", "val"], origin: Path | None = None
) -> tuple[list[Path], torch.Tensor]:
    """Image files and labels of one split of the official layout (`origin`: what to name in errors)."""
    index = {w: k for k, w in enumerate(wnids(base))}
    files: list[Path] = []
    labels: list[int] = []
    if split == "train":
        if not (base / "train").is_dir():
            raise DatasetMissing(
                f"tiny_imagenet: the train split is missing: expected {DIR}/train/<wnid>/images/*.JPEG "
                f"in {origin or base} (a val-only archive has no train split; use the full {ARCHIVES[0]})"
            )
        for wnid, k in index.items():
            members = sorted(
                p for p in (base / "train" / wnid / "images").glob("*") if p.suffix.lower() in IMAGE_SUFFIXES
            )
            if not members:
                raise DatasetMissing(f"tiny_imagenet: no images in {base}/train/{wnid}/images/")
            files += members
            labels += [k] * len(members)
    else:
        ann = base / "val" / "val_annotations.txt"
        if not ann.is_file():
            raise DatasetMissing(
                f"tiny_imagenet: the val split is missing: expected {ann} and {base}/val/images/*.JPEG"
            )
        for line_no, line in enumerate(ann.read_text().splitlines(), 1):
            fields = line.split("\t")
            if len(fields) < 2 or fields[1] not in index:
                raise DatasetMissing(f"{ann}:{line_no}: expected '<file>\\t<wnid>\\t...' with a wnid from wnids.txt")
            files.append(base / "val" / "images" / fields[0])
            labels.append(index[fields[1]])
        missing = [f for f in files if not f.is_file()]
        if missing:
            raise DatasetMissing(f"tiny_imagenet: {len(missing)} images listed in {ann} are missing, e.g. {missing[0]}")
    return files, torch.tensor(labels, dtype=torch.long)


def load_split(p: TinyImageNetParams, root: Path | None, split: Literal["train", "val"]) -> dict[str, torch.Tensor]:
    """One split as cached tensors {"x", "y"} (+ "mean", "std" for train); loadable alone."""
    where = find(p, root)
    if isinstance(where, Found) and where.archive_sha256:  # keyed by the archive: extracted only to decode

        def build() -> dict[str, torch.Tensor]:
            files, labels = split_files(where.path, split, where.origin)
            return split_tensors(decode_images(files), labels, split == "train")

        return cached_tensors(f"tiny_imagenet-{split}", cache_key(split, where.archive_sha256), build)
    if isinstance(where, Found) and (where.path / "wnids.txt").is_file():
        files, labels = split_files(where.path, split, where.origin)
        key = cache_key(split, files_fingerprint(files, where.path))
        return cached_tensors(
            f"tiny_imagenet-{split}", key, lambda: split_tensors(decode_images(files), labels, split == "train")
        )
    source = where.path if isinstance(where, Found) else where
    names = ["train"] if split == "train" else ["valid", "validation", "val", "test"]
    key = cache_key(split, "hf", where.checksum() if isinstance(where, Found) else where)
    return cached_tensors(
        f"tiny_imagenet-{split}",
        key,
        lambda: split_tensors(
            *hf_split(open_hf(source), names, ["image", "img"], ["label", "labels"], str(source)), split == "train"
        ),
    )


def load_tiny_imagenet(p: TinyImageNetParams, root: Path | None) -> SourceData:
    train = load_split(p, root, "train")
    test = load_split(p, root, "val")
    return SourceData(
        train["x"],
        train["y"],
        test["x"],
        test["y"],
        NUM_CLASSES,
        "image",
        mean=tuple(train["mean"].tolist()),
        std=tuple(train["std"].tolist()),
    )


def probe_tiny_imagenet(root: Path | None) -> Found:
    where = find(TinyImageNetParams(), root)
    val_only = isinstance(where, Found) and (
        where.origin.name == ARCHIVES[-1]
        or (where.origin.is_dir() and (where.origin / "wnids.txt").is_file() and not (where.origin / "train").is_dir())
    )
    if val_only:
        raise DatasetMissing(
            f"tiny_imagenet: only the val split is at {where.origin}; the train split "
            f"({DIR}/train/<wnid>/images/*.JPEG) is missing. {HELP}"
        )
    return where


DATASETS.register(
    DatasetSpec(
        "tiny_imagenet",
        load_tiny_imagenet,
        HELP,
        TinyImageNetParams,
        probe_tiny_imagenet,
        downloads=((URL, ARCHIVES[0]),),
    )
)
