"""LEAF Shakespeare: next-character prediction, one client per (play, character).

x: 80-character strings, y: the next character, encoded with LEAF's 80-symbol vocabulary.
"""

from __future__ import annotations

from pathlib import Path

import torch

from benchmark.data.archive import Found
from benchmark.data.leaf import leaf_location, leaf_source, load_leaf_users
from benchmark.data.source import SourceData, register_dataset, register_probe
from benchmark.errors import DatasetMissing
from benchmark.fl.base import StrictParams

# the alphabet of LEAF's language utilities; index = token id
VOCAB = "\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}"
assert len(VOCAB) == 80 and len(set(VOCAB)) == 80
SEQ_LEN = 80
_INDEX = {c: i for i, c in enumerate(VOCAB)}

SHAKESPEARE_HELP = (
    "Build it with LEAF (data/shakespeare: ./preprocess.sh -s niid --sf 0.2 -k 0 -t sample -tf 0.8) or with "
    "`fedbench data prepare shakespeare` from shakespeare-complete-works.txt.gz, and put data/ at "
    "<root>/shakespeare/data/{train,test}/*.json."
)


class ShakespeareParams(StrictParams):
    pass


def encode(texts: list[str], user: str, length: int) -> torch.Tensor:
    """(len(texts), length) int64 token ids; an unknown symbol is an error, not a silent id."""
    out = torch.empty((len(texts), length), dtype=torch.long)
    for i, text in enumerate(texts):
        if len(text) != length:
            raise DatasetMissing(f"shakespeare user {user!r}: example {i} has {len(text)} characters, expected {length}")
        try:
            out[i] = torch.tensor([_INDEX[c] for c in text])
        except KeyError as err:
            raise DatasetMissing(f"shakespeare user {user!r}: character {err.args[0]!r} is not in LEAF's vocabulary") from None
    return out


@register_dataset("shakespeare", SHAKESPEARE_HELP)
def load_shakespeare(params: dict, root: Path | None) -> SourceData:
    ShakespeareParams(**params)
    users, train, test = load_leaf_users(root, "shakespeare")
    return leaf_source(users, train, test, lambda x, u: encode(x, u, SEQ_LEN),
                       lambda y, u: encode(y, u, 1).squeeze(1), len(VOCAB), "sequence")


@register_probe("shakespeare")
def probe_shakespeare(root: Path | None) -> Found:
    return leaf_location(root, "shakespeare")
