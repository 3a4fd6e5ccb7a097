"""LEAF CelebA: smiling or not, one client per celebrity.

`<root>/celeba/data/{train,test}/*.json` (x = image file names, y = 0/1) and the images in
`<root>/celeba/data/raw/img_align_celeba/`, as LEAF's preprocessing leaves them. Images are
resized to `image_size` (84x84 as in LEAF) and cached as uint8 tensors.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from benchmark.data.archive import Found
from benchmark.data.cache import cache_key, cached_tensors, files_fingerprint
from benchmark.data.images import decode_images, split_tensors
from benchmark.data.leaf import integer_labels, leaf_location, leaf_source, load_leaf_users
from benchmark.data.source import DATASETS, DatasetSpec, SourceData
from benchmark.errors import DatasetMissing
from benchmark.lazy import torch
from benchmark.params import StrictParams

IMAGES = "raw/img_align_celeba"
HELP = (
    "Build CelebA with LEAF (data/celeba: put img_align_celeba/ and list_attr_celeba.txt, identity_CelebA.txt "
    "in data/raw/, then ./preprocess.sh -s niid --sf 1.0 -k 5 -t sample) and copy its data/ folder, raw images "
    "included, to <root>/celeba/data/."
)


class CelebaParams(StrictParams):
    image_size: int = Field(84, ge=8, le=512)


def _images(users: list[str], split: dict, img_dir: Path, size: int, tag: str):
    """Decode (cached) every image of `split` in user order: (tensors {"x", ...}, to_x(names, user))."""
    files = [img_dir / name for u in users for name in split[u]["x"]]
    missing = [f for f in files if not f.is_file()]
    if missing:
        raise DatasetMissing(
            f"celeba: {len(missing)} images named in the LEAF JSON are not in {img_dir}, e.g. {missing[0].name}"
        )
    key = cache_key(tag, size, files_fingerprint(files, img_dir))
    x = cached_tensors(
        f"celeba-{tag}", key, lambda: split_tensors(decode_images(files, (size, size)), torch.empty(0), tag == "train")
    )
    starts, pos = {}, 0
    for u in users:
        starts[u], pos = pos, pos + len(split[u]["x"])
    return x, lambda names, u: x["x"][starts[u] : starts[u] + len(names)]


def _binary(y: list, user: str) -> torch.Tensor:
    t = integer_labels(y, user)
    if ((t != 0) & (t != 1)).any():
        raise DatasetMissing(f"celeba user {user!r}: labels must be 0/1 (smiling), found {sorted(set(y))[:5]}")
    return t


def load_celeba(p: CelebaParams, root: Path | None) -> SourceData:
    users, train, test = load_leaf_users(root, "celeba")
    base = leaf_location(root, "celeba")
    img_dir = base.path / IMAGES
    if not img_dir.is_dir():
        raise DatasetMissing(
            f"celeba: the images are missing: expected celeba/data/{IMAGES}/*.jpg in {base.origin.parent.parent}.\n  {HELP}"
        )
    train_imgs, train_x = _images(users, train, img_dir, p.image_size, "train")
    _, test_x = _images(users, test, img_dir, p.image_size, "test")
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


def probe_celeba(root: Path | None) -> Found:
    return leaf_location(root, "celeba")


DATASETS.register(DatasetSpec("celeba", load_celeba, HELP, CelebaParams, probe_celeba))
