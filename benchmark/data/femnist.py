"""LEAF FEMNIST: 28x28 handwritten characters (62 classes), one client per writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmark.data.archive import Found
from benchmark.data.leaf import cached_leaf_source, integer_labels, leaf_location, leaf_source, load_leaf_users
from benchmark.data.source import DATASETS, DatasetSpec, NoParams, SourceData
from benchmark.lazy import torch

FEMNIST_HELP = (
    "Build FEMNIST with LEAF (github.com/TalwalkarLab/leaf, data/femnist: ./preprocess.sh -s niid "
    "--sf 0.05 -k 0 -t sample) and put its data/ folder at <root>/femnist/data/{train,test}/*.json."
)


def load_femnist(p: NoParams, root: Path | None) -> SourceData:
    def build() -> SourceData:
        users, train, test = load_leaf_users(root, "femnist")
        pixels = lambda x, u: torch.from_numpy(np.asarray(x, dtype=np.float32)).reshape(-1, 1, 28, 28)  # noqa: E731
        return leaf_source(users, train, test, pixels, integer_labels, 62, "image")

    return cached_leaf_source(root, "femnist", build)


def probe_femnist(root: Path | None) -> Found:
    return leaf_location(root, "femnist")


DATASETS.register(DatasetSpec("femnist", load_femnist, FEMNIST_HELP, probe=probe_femnist))
