"""Training-time image augmentation, batched on the device: no per-sample Python.

Each transform is one tensor program for the whole batch; its per-image draws (crop offsets,
flip flags, angles) come from the generator FederatedData derives from (seed, round, client),
so augmentation is reproducible and identical for every method and execution mode.

The image preprocessor (registered for source kind "image") does, in order:
uint8 -> float in [0, 1]; (training only) random crop of the zero-padded image, horizontal
flip, rotation, each as configured; per-channel normalisation with the source's mean/std.
Padding and rotation fill with 0 *before* normalisation (black, as torchvision's
RandomCrop/RandomRotation on images do). Float sources (FEMNIST) are already scaled: they are
augmented if configured and never normalised again.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from benchmark.data.source import SourceData
from benchmark.engine.fed_data import Preprocessor
from benchmark.job.config import JobConfig
from benchmark.job.settings import AugmentConfig


def _uniform(n: int, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """n draws in [0, 1) from `gen` (on the generator's device), moved to `device`."""
    return torch.rand(n, generator=gen, device=gen.device).to(device)


def window(x: torch.Tensor, padding: int, top: torch.Tensor, left: torch.Tensor, mirror: torch.Tensor) -> torch.Tensor:
    """Image i's HxW window at (top[i], left[i]) of x zero-padded by `padding`, mirrored
    left-right where mirror[i]: random crop and horizontal flip as one gather.

    The padded image is never built: output pixels whose source lies in the padding are
    zeroed in place (a padded copy costs a large fresh allocation per batch on CPU).
    """
    n, c, h, w = x.shape
    cols = torch.arange(w, device=x.device).expand(n, w)
    cols = torch.where(mirror.view(n, 1), w - 1 - cols, cols) + (left.view(n, 1) - padding)
    rows = torch.arange(h, device=x.device) + (top.view(n, 1) - padding)
    inside = ((rows >= 0) & (rows < h)).view(n, 1, h, 1) & ((cols >= 0) & (cols < w)).view(n, 1, 1, w)
    index = rows.clamp(0, h - 1).view(n, h, 1) * w + cols.clamp(0, w - 1).view(n, 1, w)
    out = x.flatten(2).gather(2, index.view(n, 1, h * w).expand(n, c, h * w)).view(n, c, h, w)
    return out.masked_fill_(~inside, 0)


def random_window(x: torch.Tensor, padding: int, flip: bool, gen: torch.Generator) -> torch.Tensor:
    """Random crop of the zero-padded image (if padding > 0), then a coin-flip mirror (if flip)."""
    n = x.shape[0]
    offsets = torch.zeros(2, n, dtype=torch.long, device=x.device)
    if padding > 0:
        offsets = torch.randint(0, 2 * padding + 1, (2, n), generator=gen, device=gen.device).to(x.device)
    mirror = _uniform(n, gen, x.device) < 0.5 if flip else torch.zeros(n, dtype=torch.bool, device=x.device)
    return window(x, padding, offsets[0], offsets[1], mirror)


def rotate(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate image i by angles[i] radians about its centre; nearest pixel, zeros outside.

    Nearest sampling follows torchvision's RandomRotation default (the FedACG code's setting).
    The H/W factors keep the rotation rigid in pixels on non-square images.
    """
    n, _, h, w = x.shape
    cos, sin = torch.cos(angles), torch.sin(angles)
    zero = torch.zeros_like(cos)
    theta = torch.stack([torch.stack([cos, -sin * h / w, zero], 1), torch.stack([sin * w / h, cos, zero], 1)], 1).to(
        x.dtype
    )
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="nearest", padding_mode="zeros", align_corners=False)


def random_rotate(x: torch.Tensor, degrees: float, gen: torch.Generator) -> torch.Tensor:
    angles = (2 * _uniform(x.shape[0], gen, x.device) - 1) * math.radians(degrees)
    return rotate(x, angles)


def normalise(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    shape = (1, -1, 1, 1)
    return (x - mean.to(x.device).view(shape)).div_(std.to(x.device).view(shape))


def is_active(cfg: AugmentConfig) -> bool:
    return cfg.crop_padding > 0 or cfg.flip or cfg.rotate_degrees > 0


def augment(x: torch.Tensor, cfg: AugmentConfig, gen: torch.Generator) -> torch.Tensor:
    """Crop, flip, rotate (each only if configured, drawing from `gen` in this order)."""
    if cfg.crop_padding > 0 or cfg.flip:
        x = random_window(x, cfg.crop_padding, cfg.flip, gen)
    if cfg.rotate_degrees > 0:
        x = random_rotate(x, cfg.rotate_degrees, gen)
    return x


def image_preprocessor(src: SourceData, job: JobConfig) -> Preprocessor:
    cfg = job.dataset.augment
    stats = (torch.tensor(src.mean), torch.tensor(src.std)) if src.mean and src.std else None

    def prep(x: torch.Tensor, train: bool, gen: torch.Generator | None) -> torch.Tensor:
        raw = x.dtype == torch.uint8
        if raw:
            x = x.float().div_(255)
        if train and is_active(cfg):
            if gen is None:
                raise ValueError("training-time augmentation needs the (seed, round, client) generator")
            x = augment(x, cfg, gen)
        if raw and stats is not None:
            x = normalise(x, *stats)
        return x

    return prep
