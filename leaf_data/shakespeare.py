"""Building LEAF Shakespeare from the raw complete works, with LEAF's options.

Pipeline (LEAF's gen_all_data, sample, remove_users and split_data steps): users = (play,
character) with at least one window; samples = every 80-character window of a user's text with the
next character as target; sampling (niid: whole users in random order until `fraction` of all
samples is reached, the last one cut to the remainder; iid: `fraction` of all samples pooled and
dealt to `iid_users` users); users with fewer than `min_samples` samples dropped (LEAF keeps `>= k`);
each user with two or more samples split by position: the first max(1, int(train_fraction * n))
for training, the test windows from `test_gap` windows later (LEAF: seq_len - 1 = 79, so no test
window overlaps a training window); users left without test windows are dropped.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from leaf_data.shakespeare_text import users_text

SEQ_LEN = 80


@dataclass(frozen=True)
class BuildOptions:
    iid: bool = False
    fraction: float = 1.0  # LEAF --sf
    min_samples: int = 0  # LEAF -k
    train_fraction: float = 0.9  # LEAF --tf
    sampling_seed: int = 0  # LEAF's --smplseed: sampling and iid dealing (numpy's generator, not LEAF's draw)
    iid_users: int = 100  # iid only: users the pooled samples are dealt to
    seq_len: int = SEQ_LEN
    test_gap: int | None = None  # windows skipped between train and test (default LEAF's seq_len - 1; 0 = none)

    def tag(self) -> str:
        """LEAF-like shard name part, e.g. niid_05_keep_64."""
        return f"{'iid' if self.iid else 'niid'}_{str(self.fraction).replace('.', '')[:3]}_keep_{self.min_samples}"


def read_raw(path: Path) -> str:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="latin-1") as f:
        return f.read()


def windows(text: str, seq_len: int, count: int | None = None) -> tuple[list[str], list[str]]:
    """The first `count` (default: all) windows of `text` and the character after each."""
    n = max(0, len(text) - seq_len) if count is None else count
    return [text[i : i + seq_len] for i in range(n)], [text[i + seq_len] for i in range(n)]


def sample_users(texts: dict[str, str], opts: BuildOptions) -> dict[str, tuple[list[str], list[str]]]:
    """user -> (x, y) after LEAF's sampling step; windows are cut only for what is sampled."""
    rng = np.random.default_rng(opts.sampling_seed)
    names = list(texts)
    counts = np.array([max(0, len(texts[u]) - opts.seq_len) for u in names])
    total = int(counts.sum())
    if not opts.iid:
        wanted, out = int(opts.fraction * total), {}
        for k in rng.permutation(len(names)):
            if wanted <= 0:
                break
            take = min(int(counts[k]), wanted)  # LEAF cuts the last user to what is still wanted
            out[names[k]] = windows(texts[names[k]], opts.seq_len, take)
            wanted -= take
        return out
    # iid: sample window ids over the concatenation of all users, then deal them out
    picked = rng.choice(total, int(opts.fraction * total), replace=False)
    starts = np.cumsum(counts) - counts
    owner = np.searchsorted(starts, picked, side="right") - 1  # empty users share a start; "right" skips them
    pos = picked - starts[owner]
    out = {}
    for k, share in enumerate(np.array_split(np.arange(len(picked)), opts.iid_users)):
        cuts = [(texts[names[owner[i]]], int(pos[i])) for i in share]
        out[f"iid_{k:04d}"] = ([t[p : p + opts.seq_len] for t, p in cuts], [t[p + opts.seq_len] for t, p in cuts])
    return out


def split_user(x: list[str], y: list[str], opts: BuildOptions):
    """(train, test) by position as LEAF's sample split: at least one training sample, one of two."""
    if len(y) < 2:
        return (x[:0], y[:0]), (x[:0], y[:0])
    n_train = 1 if len(y) == 2 else max(1, int(opts.train_fraction * len(y)))
    gap = opts.seq_len - 1 if opts.test_gap is None else opts.test_gap
    start_test = n_train + (0 if opts.iid else gap)  # iid samples are unordered: nothing to separate
    return (x[:n_train], y[:n_train]), (x[start_test:], y[start_test:])


def build(raw: Path, out: Path, opts: BuildOptions) -> dict[str, int]:
    """Write `<out>/data/{train,test}/all_data_<tag>_{train,test}_<sampling seed>.json` in place of any
    earlier shards there; returns counts."""
    texts = {u: t for u, t in users_text(read_raw(raw)).items() if len(t) > opts.seq_len}
    sampled = sample_users(texts, opts)
    kept = {u: d for u, d in sampled.items() if len(d[1]) >= opts.min_samples}
    splits = {"train": {}, "test": {}}
    for user, (x, y) in kept.items():
        train, test = split_user(x, y, opts)
        if train[1] and test[1]:  # LEAF keeps users with data on both sides
            splits["train"][user] = {"x": train[0], "y": train[1]}
            splits["test"][user] = {"x": test[0], "y": test[1]}
    for split, users in splits.items():
        folder = out / "data" / split
        folder.mkdir(parents=True, exist_ok=True)
        for earlier in folder.glob("*.json"):  # an earlier build's shards would be read with these
            earlier.unlink()
        blob = {"users": list(users), "num_samples": [len(d["y"]) for d in users.values()], "user_data": users}
        (folder / f"all_data_{opts.tag()}_{split}_{opts.sampling_seed}.json").write_text(json.dumps(blob))
    return {
        "users": len(texts),  # with at least one window: LEAF's all_data users
        "users_sampled": len(sampled),
        "users_kept": len(splits["train"]),
        "train_samples": sum(len(d["y"]) for d in splits["train"].values()),
        "test_samples": sum(len(d["y"]) for d in splits["test"].values()),
    }
