"""LEAF's sample, remove_users and split_data steps (data/utils/ in LEAF), shard by shard.

A shard is LEAF's all_data JSON object: {"users": [...], "num_samples": [...], "user_data":
{user: {"x": xs, "y": ys}}}; xs may be a list or a numpy array (indexed by position). The random
draws are LEAF's, made with `random.Random(seed)` in LEAF's order, so the same all_data shards
read in the same order give LEAF's users and samples: one generator for sampling over all shards
(seeded with LEAF's --smplseed), a second for the split (--spltseed). LEAF reads the shards in
file-system order (os.listdir); the order here is SHARD_ORDERS' choice.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

SPLITS = ("sample", "user")
# The order the all_data shards are sampled and split in: one generator runs over all of them, so the
# order changes the draw. numeric: all_data_0, 1, 2, ..., 10 (the order LEAF writes them); name:
# all_data_0, 1, 10, 100, 11, ... (sorted names, what `ls` shows). LEAF's own order is os.listdir's,
# which differs between file systems and is recorded nowhere.
SHARD_ORDERS = ("numeric", "name")


@dataclass(frozen=True)
class LeafOptions:
    """LEAF's preprocess.sh options: -s niid|iid, --sf, --iu, -k, -t sample|user, --tf, --smplseed,
    --spltseed; and the shard order (more than one shard: FEMNIST)."""

    iid: bool = False  # -s iid
    fraction: float = 1.0  # --sf: fraction of each all_data shard's samples kept
    iid_users: float = 0.01  # --iu: iid only, users per shard as a fraction of its users
    min_samples: int = 0  # -k: users with fewer samples are removed (LEAF keeps >= k)
    split: str = "sample"  # -t: each user's samples split (sample) or users split (user)
    train_fraction: float = 0.9  # --tf
    sampling_seed: int = 0  # --smplseed (LEAF's default: the clock, int(time.time()))
    split_seed: int = 0  # --spltseed (LEAF's default: the clock)
    shard_order: str = "numeric"  # SHARD_ORDERS

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, not {self.split!r}")
        if self.shard_order not in SHARD_ORDERS:
            raise ValueError(f"--shard-order must be one of {SHARD_ORDERS}, not {self.shard_order!r}")
        if not 0 < self.fraction <= 1 or not 0 < self.train_fraction < 1:
            raise ValueError("--sf must be in (0, 1] and --tf in (0, 1)")

    @classmethod
    def from_prepare(cls, options: dict) -> LeafOptions:
        """From `fedbench data prepare`'s options; Shakespeare's --test-gap is refused here."""
        if options.get("test_gap") is not None:
            raise ValueError("--test-gap applies to shakespeare only")
        fields = {k: v for k, v in options.items() if k != "test_gap" and v is not None}
        return cls(**fields)

    def tag(self) -> str:
        """LEAF-like file name part with both seeds, e.g. niid_05_keep_0_sample_1549786595_1549786796."""
        frac = str(self.fraction).replace(".", "")[:3]
        kind = f"{'iid' if self.iid else 'niid'}_{frac}_keep_{self.min_samples}_{self.split}"
        return f"{kind}_{self.sampling_seed}_{self.split_seed}"

    def ordered(self, count: int) -> list[int]:
        """The shard numbers 0..count-1 in the order they are sampled and split (SHARD_ORDERS)."""
        numbers = list(range(count))
        return numbers if self.shard_order == "numeric" else sorted(numbers, key=lambda i: f"all_data_{i}")


def shard(users: dict[str, dict]) -> dict:
    """A LEAF JSON object from user -> {"x", "y"} (in that user order)."""
    return {"users": list(users), "num_samples": [len(d["y"]) for d in users.values()], "user_data": users}


def take(data: dict, indices) -> dict:
    """{"x", "y"} restricted to `indices`, in that order."""
    x, y = data["x"], data["y"]
    if hasattr(x, "shape"):  # numpy: fancy indexing keeps it one array
        return {"x": x[list(indices)], "y": y[list(indices)]}
    return {"x": [x[i] for i in indices], "y": [y[i] for i in indices]}


def sample_niid(blob: dict, fraction: float, rng: random.Random) -> dict:
    """Whole users in random order until int(fraction * samples) are taken; the last user is cut to
    the remainder: its first samples, in random order (LEAF's sample.py)."""
    wanted = int(fraction * sum(blob["num_samples"]))
    users = list(blob["users"])
    rng.shuffle(users)
    out, total = {}, 0
    for user in users:
        if total >= wanted:
            break
        data = blob["user_data"][user]
        n = len(data["y"])
        if total + n > wanted:
            n = wanted - total
            data = take(data, rng.sample(range(n), n))
        out[user], total = data, total + n
    return shard(out)


def iid_divide(n: int, groups: int) -> list[range]:
    """LEAF's iid_divide: positions 0..n-1 in `groups` runs, the smaller runs first."""
    size, big = divmod(n, groups)
    small = groups - big
    runs = [range(size * i, size * (i + 1)) for i in range(small)]
    start = size * small
    return runs + [range(start + (size + 1) * i, start + (size + 1) * (i + 1)) for i in range(big)]


def sample_iid(blob: dict, fraction: float, user_fraction: float, rng: random.Random, first_id: int) -> dict:
    """int(fraction * samples) samples pooled and dealt to round(user_fraction * users) new users
    named first_id, first_id + 1, ... (LEAF's sample.py --iid)."""
    pool = [(u, i) for u in blob["users"] for i in range(len(blob["user_data"][u]["y"]))]
    picked = rng.sample(range(len(pool)), int(fraction * len(pool)))
    n_users = max(1, int(round(user_fraction * len(blob["users"]))))
    out = {}
    for k, run in enumerate(iid_divide(len(picked), n_users)):
        xs, ys = [], []
        for j in run:
            user, i = pool[picked[j]]
            xs.append(blob["user_data"][user]["x"][i])
            ys.append(blob["user_data"][user]["y"][i])
        arrays = xs and hasattr(xs[0], "shape")  # numpy rows (FEMNIST's pixels) stay one array
        out[str(first_id + k)] = {"x": np.stack(xs), "y": np.array(ys)} if arrays else {"x": xs, "y": ys}
    return shard(out)


def remove_small(blob: dict, min_samples: int) -> dict:
    """Users with at least `min_samples` samples (LEAF's remove_users.py keeps `>=`)."""
    return shard({u: blob["user_data"][u] for u in blob["users"] if len(blob["user_data"][u]["y"]) >= min_samples})


def split_by_sample(blob: dict, train_fraction: float, rng: random.Random) -> tuple[dict, dict]:
    """Each user with 2+ samples: max(1, int(tf * n)) random samples train (1 of 2), the rest
    test, both kept in their original order (LEAF's split_data.py --by_sample)."""
    train, test = {}, {}
    for user in blob["users"]:
        data = blob["user_data"][user]
        n = len(data["y"])
        if n < 2:
            continue
        n_train = 1 if n == 2 else max(1, int(train_fraction * n))
        chosen = set(rng.sample(range(n), n_train))
        train[user] = take(data, [i for i in range(n) if i in chosen])
        test[user] = take(data, [i for i in range(n) if i not in chosen])
    return shard(train), shard(test)


def choose_train_users(counts: list[int], train_fraction: float, rng: random.Random) -> set[int]:
    """LEAF's split_data.py --by_user: int(tf * users) users drawn for training over all shards
    (`counts` = users per shard, in order); returns their positions in that order."""
    total = sum(counts)
    return set(rng.sample(range(total), int(train_fraction * total)))


def sample_and_remove(shards: Iterator[dict], opts: LeafOptions) -> Iterator[dict]:
    """LEAF's sample step (niid or iid) then remove_users, one all_data shard at a time."""
    sampling = random.Random(opts.sampling_seed)
    next_iid_user = 0
    for blob in shards:
        if opts.iid:
            blob = sample_iid(blob, opts.fraction, opts.iid_users, sampling, next_iid_user)
            next_iid_user += len(blob["users"])
        else:
            blob = sample_niid(blob, opts.fraction, sampling)
        yield remove_small(blob, opts.min_samples)


def split_shards(
    kept: Iterable[dict], opts: LeafOptions, counts: list[int] | None = None
) -> Iterator[tuple[dict, dict]]:
    """(train, test) per kept shard: by sample, or by user (`counts`: every kept shard's users)."""
    rng = random.Random(opts.split_seed)
    if opts.split == "sample":
        for blob in kept:
            yield split_by_sample(blob, opts.train_fraction, rng)
        return
    chosen, offset = choose_train_users(counts or [], opts.train_fraction, rng), 0
    for blob in kept:
        flags = [offset + i in chosen for i in range(len(blob["users"]))]
        offset += len(blob["users"])
        train = {u: blob["user_data"][u] for u, t in zip(blob["users"], flags) if t}
        test = {u: blob["user_data"][u] for u, t in zip(blob["users"], flags) if not t}
        yield shard(train), shard(test)
