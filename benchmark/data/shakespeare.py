"""LEAF Shakespeare: next-character prediction, one client per (play, character).

x: 80-character strings, y: the next character, encoded with LEAF's 80-symbol vocabulary.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmark.data.archive import Found
from benchmark.data.leaf import cached_leaf_source, leaf_source, load_leaf_users
from benchmark.data.leaf_hf import HubTable, LeafRouteParams, hub_source, route
from benchmark.data.source import DATASETS, DatasetSpec, RawBuild, SourceData
from benchmark.errors import DatasetMissing
from benchmark.lazy import torch

# the alphabet of LEAF's language utilities; index = token id
VOCAB = "\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}"
assert len(VOCAB) == 80 and len(set(VOCAB)) == 80
SEQ_LEN = 80
RAW_TEXT = ("shakespeare-complete-works.txt.gz", "shakespeare-complete-works.txt")  # what `data prepare` builds from
_LOOKUP = np.full(128, -1, dtype=np.int64)  # code point -> token id (-1: not in the vocabulary)
_LOOKUP[[ord(c) for c in VOCAB]] = np.arange(len(VOCAB))

SHAKESPEARE_HELP = (
    "Build it with LEAF (data/shakespeare: ./preprocess.sh -s niid --sf 0.2 -k 0 -t sample -tf 0.8) or with "
    "`fedbench data prepare shakespeare` from shakespeare-complete-works.txt.gz, and put data/ at "
    "<root>/shakespeare/data/{train,test}/*.json."
)


class ShakespeareParams(LeafRouteParams):
    pass


def encode(texts: list[str], user: str, length: int) -> torch.Tensor:
    """(len(texts), length) int64 token ids; an unknown symbol is an error, not a silent id."""
    for i, text in enumerate(texts):
        if len(text) != length:
            raise DatasetMissing(
                f"shakespeare user {user!r}: example {i} has {len(text)} characters, expected {length}"
            )
    joined = "".join(texts)
    codes = np.fromiter(map(ord, joined), dtype=np.int64, count=len(joined))
    ids = np.where(codes < len(_LOOKUP), _LOOKUP[np.minimum(codes, len(_LOOKUP) - 1)], -1)
    if (ids < 0).any():
        bad = joined[int(np.argmax(ids < 0))]
        raise DatasetMissing(f"shakespeare user {user!r}: character {bad!r} is not in LEAF's vocabulary")
    return torch.from_numpy(ids.reshape(len(texts), length))


def hub_windows(x: list, y: list) -> tuple[np.ndarray, np.ndarray]:
    """A batch of flwrlabs/shakespeare (80-character windows, next characters) as token ids."""
    return encode(x, "flwrlabs/shakespeare", SEQ_LEN).numpy(), encode(y, "flwrlabs/shakespeare", 1).numpy()[:, 0]


HUB = HubTable("shakespeare", "flwrlabs/shakespeare", "character_id", "x", "y", hub_windows, positional=True)


def load_shakespeare(p: ShakespeareParams, root: Path | None) -> SourceData:
    fmt, where = route(HUB, p, root)
    if fmt == "hf":
        return hub_source(HUB, where, p.hf_split_seed, len(VOCAB), "sequence")

    def build() -> SourceData:
        users, train, test = load_leaf_users(root, "shakespeare", order=p.user_order)
        return leaf_source(
            users,
            train,
            test,
            lambda x, u: encode(x, u, SEQ_LEN),
            lambda y, u: encode(y, u, 1).squeeze(1),
            len(VOCAB),
            "sequence",
        )

    return cached_leaf_source(root, "shakespeare", build, p.user_order)


def probe_shakespeare(root: Path | None) -> Found | str:
    return route(HUB, ShakespeareParams(), root)[1]


def raw_text(root: Path | None) -> Path | None:
    return next((root / n for n in RAW_TEXT if root and (root / n).is_file()), None)


def build_from_text(raw: Path, dest: Path, options: dict) -> dict:
    """LEAF's preprocessing of the raw text into dest/shakespeare/data (leaf_data/shakespeare.py);
    `options` are `fedbench data prepare`'s (-s, --sf, -k, --tf, --smplseed, --test-gap; iid deals to 100 users)."""
    from leaf_data.shakespeare import BuildOptions, build

    if options.get("split", "sample") != "sample":
        raise ValueError("the Shakespeare build splits each user's windows by position: use -t sample")
    if options.get("iid_users") is not None:
        raise ValueError("--iu applies to femnist and celeba (the Shakespeare iid build deals to 100 users)")
    if options.get("shard_order") is not None:
        raise ValueError("--shard-order applies to femnist: the Shakespeare text is one shard")
    fields = ("iid", "fraction", "min_samples", "train_fraction", "sampling_seed", "test_gap")
    given = {k: options[k] for k in fields if options.get(k) is not None}
    stats = build(raw, dest / "shakespeare", BuildOptions(**given))
    # LEAF takes --spltseed here too (its published command passes one) and draws nothing with it
    unused = {"spltseed": "draws nothing (the split is by position, as LEAF's)"}
    return stats | (unused if options.get("split_seed") is not None else {})


# a LEAF archive next to the raw text (e.g. a sample) is not what `data prepare` builds: the text wins
RAW_BUILD = RawBuild(
    raw_text,
    build_from_text,
    f"{' or '.join(RAW_TEXT)} (the 1994 complete works LEAF uses, www.gutenberg.org/files/100/old/1994-01-100.zip)",
)
DATASETS.register(
    DatasetSpec(
        "shakespeare", load_shakespeare, SHAKESPEARE_HELP, ShakespeareParams, probe_shakespeare, raw_build=RAW_BUILD
    )
)
