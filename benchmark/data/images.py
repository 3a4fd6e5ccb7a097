"""Decoding image files with Pillow (thread pool; Pillow releases the GIL while decoding)
into one uint8 NCHW tensor, and the per-channel statistics used for normalisation."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from benchmark.errors import DatasetMissing, UserError
from benchmark.lazy import torch

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".ppm"}


def _pil():
    try:
        from PIL import Image
    except ImportError:
        raise UserError("decoding images needs Pillow: pip install 'fedbench[images]'") from None
    return Image


def decode_images(
    paths: Sequence[Path], size: tuple[int, int] | None = None, threads: int | None = None, resample: str = "lanczos"
) -> torch.Tensor:
    """(N, 3, H, W) uint8. With `size` = (H, W) images are resized with Pillow's `resample` filter
    (lanczos, bicubic or nearest); without it every image must have the size of the first."""
    if not paths:
        raise DatasetMissing("no image files to decode")
    image_mod = _pil()

    def read(path: Path) -> np.ndarray:
        try:
            with image_mod.open(path) as img:
                img = img.convert("RGB")
                if size is not None and img.size != (size[1], size[0]):
                    img = img.resize((size[1], size[0]), image_mod.Resampling[resample.upper()])
                return np.asarray(img)
        except (OSError, ValueError) as err:
            raise DatasetMissing(f"cannot decode image {path}: {err}") from None

    first = read(paths[0])
    out = np.empty((len(paths), *first.shape), dtype=np.uint8)
    out[0] = first

    def fill(i: int) -> None:
        arr = read(paths[i])
        if arr.shape != first.shape:
            raise DatasetMissing(
                f"{paths[i]} is {arr.shape[1]}x{arr.shape[0]}, expected {first.shape[1]}x{first.shape[0]} like {paths[0]}"
            )
        out[i] = arr

    workers = threads or min(16, (os.cpu_count() or 1) * 2)
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(fill, range(1, len(paths))))
    return torch.from_numpy(out).permute(0, 3, 1, 2).contiguous()


def image_folder(split_dir: Path, classes: list[str] | None = None) -> tuple[list[Path], torch.Tensor, list[str]]:
    """`<split_dir>/<class>/*.<image>` -> (files, labels, class names). Classes are sorted names
    unless given (so test uses the train split's classes)."""
    found = sorted(d.name for d in split_dir.iterdir() if d.is_dir())
    classes = classes if classes is not None else found
    extra = set(found) - set(classes)
    if extra:
        raise DatasetMissing(f"{split_dir} has class folders not in the train split: {sorted(extra)[:5]}")
    files: list[Path] = []
    labels: list[int] = []
    for k, name in enumerate(classes):
        members = (
            sorted(p for p in (split_dir / name).glob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
            if (split_dir / name).is_dir()
            else []
        )
        files += members
        labels += [k] * len(members)
    if not files:
        raise DatasetMissing(f"no images in {split_dir}/<class>/*.{{jpg,png,...}}")
    return files, torch.tensor(labels, dtype=torch.long), classes


def channel_stats(x: torch.Tensor, chunk: int = 8192) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel mean and std of uint8 NCHW images on the [0, 1] scale (float64 sums)."""
    c = x.shape[1]
    s = torch.zeros(c, dtype=torch.float64)
    s2 = torch.zeros(c, dtype=torch.float64)
    for i in range(0, len(x), chunk):
        part = x[i : i + chunk].to(torch.float64).div_(255).transpose(0, 1).reshape(c, -1)
        s += part.sum(1)
        s2 += part.square().sum(1)
    n = x.numel() / c
    mean = s / n
    return mean, (s2 / n - mean.square()).clamp_min(0).sqrt()


def split_tensors(x: torch.Tensor, y: torch.Tensor, with_stats: bool) -> dict[str, torch.Tensor]:
    """A split as cached: images, labels and, for the training split, channel mean/std."""
    out = {"x": x, "y": y}
    if with_stats:
        out["mean"], out["std"] = channel_stats(x)
    return out
