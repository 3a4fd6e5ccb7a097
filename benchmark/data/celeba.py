"""LEAF CelebA: smiling or not, one client per celebrity.

Routes (`format`): `leaf`, `<root>/celeba/data/{train,test}/*.json` (x = image file names, y = 0/1)
as LEAF's preprocessing or `fedbench data prepare celeba` writes it, with the images in
`<root>/celeba/data/raw/img_align_celeba/` (LEAF's place) or the official `<root>/img_align_celeba/`
or `<root>/img_align_celeba.zip`; `hf`, Flower's flwrlabs/celeba table (`image`, `celeb_id`,
`Smiling`). Images are resized to `image_size` (84x84 as in LEAF) with `resample` and cached as
uint8 tensors. LEAF's own model code (models/celeba/cnn.py) resizes with Pillow's default filter
(`img.resize((84, 84))`: nearest before Pillow 7.0, bicubic since) and feeds the raw 0-255 pixels;
fedbench's defaults are choices (docs/datasets.md): Lanczos, and pixels standardised per channel.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

from benchmark.data.archive import Found, dataset_missing, locate, root_text
from benchmark.data.cache import cache_key, cached_tensors, files_fingerprint
from benchmark.data.images import decode_images, split_tensors
from benchmark.data.leaf import leaf_source, load_leaf_users
from benchmark.data.leaf_hf import HubTable, LeafRouteParams, hub_source, route
from benchmark.data.source import DATASETS, DatasetSpec, RawBuild, SourceData
from benchmark.errors import DatasetMissing
from benchmark.lazy import torch
from leaf_data.celeba import ATTRIBUTE, MIN_IMAGES, raw_folder

IMAGES = "raw/img_align_celeba"
OFFICIAL_IMAGES = ("img_align_celeba", ["img_align_celeba.zip"])  # folder, or the zip holding it (locate's arguments)
CELEBA_PAGE = "https://mmlab.ie.cuhk.edu.hk/projects/CelebA.html"
OFFICIAL_FILES = (
    f"img_align_celeba.zip (or its unzipped img_align_celeba/), list_attr_celeba.txt and identity_CelebA.txt, "
    f"downloaded by hand from {CELEBA_PAGE} (no direct URL: 'Align&Cropped Images' and 'Anno' in its Google "
    "Drive or Baidu folders)"
)
HELP = (
    f"Put {OFFICIAL_FILES} in the data root and run `fedbench data prepare celeba -k 5` (LEAF's FedACG setting); "
    "or use Flower's table: params {format: hf, hf_id: flwrlabs/celeba}."
)


class CelebaParams(LeafRouteParams):
    image_size: int = Field(84, ge=8, le=512)
    # LEAF: Pillow's default (nearest when its CelebA code was written, Pillow < 7; bicubic since)
    resample: Literal["lanczos", "bicubic", "nearest"] = "lanczos"
    # LEAF feeds raw 0-255 pixels; standardised: per channel by the training images' mean and std
    pixels: Literal["standardised", "raw"] = "standardised"


RAW_PIXELS = {"mean": (0.0, 0.0, 0.0), "std": (1 / 255,) * 3}  # (x / 255 - 0) / (1 / 255) = the 0-255 pixel


def _images(users: list[str], split: dict, img_dir: Path, size: int, tag: str, resample: str):
    """Decode (cached) every image of `split` in user order: (tensors {"x", ...}, to_x(names, user))."""
    files = [img_dir / name for u in users for name in split[u]["x"]]
    missing = [f for f in files if not f.is_file()]
    if missing:
        raise DatasetMissing(
            f"celeba: {len(missing)} images named in the LEAF JSON are not in {img_dir}, e.g. {missing[0].name}"
        )
    key = cache_key(tag, size, resample, files_fingerprint(files, img_dir))
    x = cached_tensors(
        f"celeba-{tag}",
        key,
        lambda: split_tensors(decode_images(files, (size, size), resample=resample), torch.empty(0), tag == "train"),
    )
    starts, pos = {}, 0
    for u in users:
        starts[u], pos = pos, pos + len(split[u]["x"])
    return x, lambda names, u: x["x"][starts[u] : starts[u] + len(names)]


def _binary(y: list, user: str) -> torch.Tensor:
    """0/1 Smiling labels; LEAF's metadata_to_json.py writes them as floats, (attribute + 1) / 2 = 0.0 / 1.0."""
    bad = [v for v in y if type(v) not in (int, float) or v not in (0, 1)] if isinstance(y, list) else [y]
    if bad:
        found = sorted({repr(v) for v in bad})[:5]
        raise DatasetMissing(f"celeba user {user!r}: labels must be 0/1 or LEAF's 0.0/1.0 (smiling), found {found}")
    return torch.tensor([int(v) for v in y], dtype=torch.int64)


def image_folder(root: Path | None, leaf_data: Found) -> Path:
    """The images: LEAF's data/raw/img_align_celeba/ (or the zip there), else the official folder or
    zip in the root."""
    found = locate(leaf_data.path / "raw", *OFFICIAL_IMAGES) or locate(root, *OFFICIAL_IMAGES)
    if found is None:
        raise dataset_missing(
            f"celeba: the images are missing: expected celeba/data/{IMAGES}/*.jpg, or img_align_celeba/ or "
            f"img_align_celeba.zip, in {root_text(root)}.\n  {HELP}",
            root,
        )
    return found.path


def resized(size: int, resample: str = "lanczos"):
    """A batch of the hub table: (uint8 NCHW images resized to size x size, 0/1 Smiling labels)."""

    def encode(images: list, labels: list) -> tuple[np.ndarray, np.ndarray]:
        from PIL import Image

        how = Image.Resampling[resample.upper()]
        x = np.stack([np.asarray(img.convert("RGB").resize((size, size), how)) for img in images])
        y = np.asarray([int(v) for v in labels], dtype=np.int64)
        return x.transpose(0, 3, 1, 2).copy(), np.where(y < 0, 0, y)  # bool, 0/1 or -1/1 attributes

    return encode


def hub_table(size: int, resample: str = "lanczos") -> HubTable:
    encode = resized(size, resample)
    return HubTable("celeba", "flwrlabs/celeba", "celeb_id", "image", ATTRIBUTE, encode, min_samples=MIN_IMAGES)


def load_celeba(p: CelebaParams, root: Path | None) -> SourceData:
    src = _load(p, root)
    return replace(src, **RAW_PIXELS) if p.pixels == "raw" else src


def _load(p: CelebaParams, root: Path | None) -> SourceData:
    hub = hub_table(p.image_size, p.resample)
    fmt, where = route(hub, p, root)
    if fmt == "hf":
        return hub_source(hub, where, p.hf_split_seed, 2, "image", tag=f"{p.image_size}-{p.resample}")
    users, train, test = load_leaf_users(root, "celeba", order=p.user_order)
    img_dir = image_folder(root, where)
    train_imgs, train_x = _images(users, train, img_dir, p.image_size, "train", p.resample)
    _, test_x = _images(users, test, img_dir, p.image_size, "test", p.resample)
    return leaf_source(
        users,
        train,
        test,
        train_x,
        _binary,
        2,
        "image",
        to_test_x=test_x,
        mean=tuple(train_imgs["mean"].tolist()),
        std=tuple(train_imgs["std"].tolist()),
    )


def probe_celeba(root: Path | None) -> Found | str:
    """Where CelebA is; LEAF JSON whose images are the root's official folder or zip names them in
    `also`, so a Ray node is sent both."""
    fmt, where = route(hub_table(84), CelebaParams(), root)
    if fmt == "leaf" and where.origin.is_dir() and locate(where.origin / "raw", *OFFICIAL_IMAGES) is None:
        if images := locate(root, *OFFICIAL_IMAGES):
            return replace(where, also=(images.origin,))
    return where


def build_from_official(raw: Path, dest: Path, options: dict) -> dict:
    """LEAF's CelebA preprocessing of the official annotation files into dest/celeba/data."""
    from leaf_data.celeba import build
    from leaf_data.sampling import LeafOptions

    return build(raw, dest / "celeba", LeafOptions.from_prepare(options))


RAW_BUILD = RawBuild(raw_folder, build_from_official, OFFICIAL_FILES)
DATASETS.register(DatasetSpec("celeba", load_celeba, HELP, CelebaParams, probe_celeba, raw_build=RAW_BUILD))
