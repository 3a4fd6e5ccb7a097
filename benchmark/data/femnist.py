"""LEAF FEMNIST: 28x28 handwritten characters (62 classes), one client per writer.

Routes (`format`): `leaf`, LEAF's JSON at `<root>/femnist/data/{train,test}/*.json` (built by
`fedbench data prepare femnist` from NIST SD19, or by LEAF's scripts); `hf`, Flower's
flwrlabs/femnist table (28x28 grey images, `writer_id`, `character`). Both give float pixels in
[0, 1] with white paper = 1.0, as LEAF's JSON holds them.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from benchmark.data.archive import Found
from benchmark.data.leaf import cached_leaf_source, integer_array, leaf_source, load_leaf_users
from benchmark.data.leaf_hf import HubTable, LeafRouteParams, hub_source, route
from benchmark.data.source import DATASETS, DatasetSpec, RawBuild, SourceData
from benchmark.lazy import torch

NIST_URL = "https://s3.amazonaws.com/nist-srd/SD19"
NIST_ZIPS = ("by_class.zip", "by_write.zip")
FEMNIST_HELP = (
    "Build FEMNIST with `fedbench data prepare femnist` (downloads NIST SD19's by_class.zip and by_write.zip, "
    f"about 1 GB each, from {NIST_URL}/, or takes them from the root), or with LEAF's scripts, and put data/ "
    "at <root>/femnist/data/{train,test}/*.json; or use Flower's table: params {format: hf, hf_id: flwrlabs/femnist}."
)


def leaf_pixels(x: list, y: list, user: str) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(x, dtype=np.float32).reshape(-1, 1, 28, 28), integer_array(y)


def hub_pixels(images: list, labels: list) -> tuple[np.ndarray, np.ndarray]:
    """Grey bytes, kept as uint8 until split (then LEAF's floats, byte / 255); a table with dark
    paper is inverted to LEAF's polarity (paper = 255, 1.0 as a float)."""
    x = np.stack([np.asarray(img.convert("L"), dtype=np.uint8) for img in images])
    border = np.concatenate([x[:, 0], x[:, -1], x[:, :, 0], x[:, :, -1]], axis=1)
    if border.mean() < 64:  # paper is near 255 on one side, near 0 on the other; ink rarely reaches the border
        warnings.warn(
            "flwrlabs/femnist images have dark paper: inverted to LEAF's polarity (paper = 1.0)", stacklevel=2
        )
        x = 255 - x
    return x[:, None], np.asarray(labels, dtype=np.int64)


HUB = HubTable("femnist", "flwrlabs/femnist", "writer_id", "image", "character", hub_pixels, leaf_floats=True)


def load_femnist(p: LeafRouteParams, root: Path | None) -> SourceData:
    fmt, where = route(HUB, p, root)
    if fmt == "hf":
        return hub_source(HUB, where, p.hf_split_seed, 62, "image")

    def build() -> SourceData:
        users, train, test = load_leaf_users(root, "femnist", leaf_pixels, p.user_order)
        to_tensor = lambda a, u: torch.from_numpy(a)  # noqa: E731
        return leaf_source(users, train, test, to_tensor, to_tensor, 62, "image")

    return cached_leaf_source(root, "femnist", build, p.user_order)


def probe_femnist(root: Path | None) -> Found | str:
    return route(HUB, LeafRouteParams(), root)[1]


def nist_root(root: Path | None) -> Path | None:
    from leaf_data.nist import find_parts

    return root if find_parts(root) else None


def build_from_nist(raw: Path, dest: Path, options: dict) -> dict:
    """LEAF's FEMNIST preprocessing of NIST SD19 into dest/femnist/data (leaf_data/femnist.py)."""
    from leaf_data.femnist import build
    from leaf_data.sampling import LeafOptions

    return build(raw, dest / "femnist", LeafOptions.from_prepare(options))


RAW_BUILD = RawBuild(nist_root, build_from_nist, f"{' and '.join(NIST_ZIPS)} (NIST SD19, {NIST_URL}/)")
DATASETS.register(
    DatasetSpec(
        "femnist",
        load_femnist,
        FEMNIST_HELP,
        LeafRouteParams,
        probe_femnist,
        downloads=tuple((f"{NIST_URL}/{name}", name) for name in NIST_ZIPS),
        raw_build=RAW_BUILD,
    )
)
