"""Reading LEAF JSON datasets: `<root>/<name>/data/{train,test}/*.json`, one client per LEAF user.

Each shard is {"users": [...], "num_samples": [...], "user_data": {user: {"x": [...], "y": [...]}}}.
Users are ordered as they first appear in the (sorted) train shards, which is what "first N
users" selects from; or, with `user_order: name`, by user id, as LEAF's own models order their clients.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmark.data.archive import Found, locate
from benchmark.data.cache import cache_key, cached_tensors
from benchmark.data.source import SourceData, require_dir
from benchmark.errors import DataInvalid, DatasetMissing
from benchmark.lazy import torch

# (x, y, user) of one shard's user -> (x, y) as arrays; applied as each shard is read, so the JSON's
# Python objects (a float object per FEMNIST pixel) live for one shard at a time
Encode = Callable[[list, list, str], tuple[np.ndarray, np.ndarray]]
# part of the tensor cache's key: caches written before test_users were kept lack them, so they are rebuilt
CACHE_LAYOUT = "test_users"


def read_leaf_split(directory: Path, encode: Encode | None = None) -> dict[str, dict]:
    """user -> {"x", "y", "file"} merged over every JSON shard in `directory`: lists, or with
    `encode` arrays concatenated over the user's shards."""
    shards = sorted(directory.glob("*.json"))
    if not shards:
        raise DatasetMissing(f"no LEAF JSON shards (*.json) in {directory}")
    pieces: dict[str, dict] = {}
    for shard in shards:
        try:
            blob = json.loads(shard.read_text())
            warn_if_counts_disagree(shard, blob)
            for user in blob["users"]:
                data = blob["user_data"][user]
                x, y = (data["x"], data["y"]) if encode is None else encoded(encode, data, shard, user)
                entry = pieces.setdefault(user, {"x": [], "y": [], "file": shard})
                entry["x"].append(x)
                entry["y"].append(y)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as err:  # not UTF-8, JSON, LEAF
            raise DatasetMissing(f"{shard} is not a LEAF JSON shard ({type(err).__name__}: {err})") from None
        del blob  # before the next shard is parsed
    return {u: merge(e, encode is not None) for u, e in pieces.items()}


def encoded(encode: Encode, data: dict, shard: Path, user: str) -> tuple[np.ndarray, np.ndarray]:
    """One user's examples of one shard as arrays; what the encoder refuses (ragged or misshapen inputs,
    non-integer labels) names the shard and the user."""
    try:
        return encode(data["x"], data["y"], user)
    except (ValueError, TypeError, OverflowError) as err:
        raise DataInvalid(f"{shard}: user {user!r}: {err}; fix or replace this shard") from None


def merge(entry: dict, arrays: bool) -> dict:
    """One user's pieces (one per shard it appears in) joined; each piece is dropped once joined."""
    out = {"file": entry["file"]}
    for key in ("x", "y"):
        parts = entry.pop(key)
        if len(parts) == 1:
            out[key] = parts[0]
        else:
            out[key] = np.concatenate(parts) if arrays else [v for part in parts for v in part]
    return out


def warn_if_counts_disagree(shard: Path, blob: dict) -> None:
    """The records are what gets loaded; a `num_samples` header that disagrees is worth a word."""
    declared = sum(blob.get("num_samples", []))
    actual = sum(len(blob["user_data"][u]["y"]) for u in blob["users"])
    if "num_samples" in blob and declared != actual:
        warnings.warn(
            f"{shard.name}: num_samples says {declared} examples but the shard holds {actual}; "
            f"loading the {actual} records",
            stacklevel=3,
        )


def leaf_archives(name: str) -> list[str]:
    """Archive names accepted at `<root>/` in place of the extracted `<name>/` folder."""
    return [f"{name}.tar.gz", f"{name}-leaf.tar.gz", f"{name}-leaf-sample.tar.gz"]


def leaf_location(root: Path | None, name: str) -> Found:
    """Where `<name>/data/` is: extracted under the root, or inside one of `leaf_archives(name)`."""
    found = locate(root, f"{name}/data", leaf_archives(name))
    if found is None:
        require_dir(
            None if root is None else root / name / "data",
            name,
            f"{name}/data/{{train,test}}/*.json (or {' / '.join(leaf_archives(name))})",
        )
    return found


def leaf_dirs(root: Path | None, name: str) -> tuple[Path, Path]:
    base = leaf_location(root, name).path
    return require_dir(base / "train", name, "data/train/*.json"), require_dir(base / "test", name, "data/test/*.json")


def load_leaf_users(
    root: Path | None, name: str, encode: Encode | None = None, order: str = "files"
) -> tuple[list[str], dict, dict]:
    """(users with both train and test data in first-seen order, or sorted by id with `order` name;
    train users, test users)."""
    train_dir, test_dir = leaf_dirs(root, name)
    train, test = read_leaf_split(train_dir, encode), read_leaf_split(test_dir, encode)
    users = [u for u in train if u in test]
    users = sorted(users) if order == "name" else users
    if not users:
        raise DatasetMissing(
            f"{name}: no user has both train and test data under {train_dir.parent}; fedbench's clients need "
            "both (a LEAF build split by user, -t user, has none: rebuild with -t sample)"
        )
    return users, train, test


def integer_array(y: list) -> np.ndarray:
    """LEAF labels as int64; a float (3.5), bool or string label is an error, never truncated."""
    if not isinstance(y, list):
        raise ValueError(f"labels are {type(y).__name__}, not a list")
    bad = next((i for i, v in enumerate(y) if type(v) is not int), None)  # bool is an int subclass
    if bad is not None:
        raise ValueError(f"label {y[bad]!r} (example {bad}) is not an integer")
    return np.asarray(y, dtype=np.int64)


def integer_labels(y: list, user: str) -> torch.Tensor:
    return torch.from_numpy(integer_array(y))


def stack_users(
    users: list[str], split: dict, to_x: Callable[[list, str], torch.Tensor], to_y: Callable[[list, str], torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Concatenate `users`' examples of one split: (x, y, user index of every example). Each user's
    x is copied into one preallocated tensor and then dropped from `split`, so the inputs are held
    about once, not twice (full FEMNIST's are 2.4 GB as float32)."""
    ys = [_named(to_y, split, u, "y") for u in users]
    out, pos = None, 0
    for u, y in zip(users, ys):
        x = _named(to_x, split, u, "x")
        if len(x) != len(y):
            raise DataInvalid(f"{split[u]['file']}: user {u!r}: {len(x)} inputs but {len(y)} labels")
        if out is None:
            out = torch.empty((sum(len(t) for t in ys), *x.shape[1:]), dtype=x.dtype)
        out[pos : pos + len(x)] = x
        pos += len(x)
        split[u]["x"] = None  # the copy is in `out`
    counts = torch.tensor([len(y) for y in ys])
    return out, torch.cat(ys), torch.repeat_interleave(torch.arange(len(users)), counts)


def _named(convert: Callable, split: dict, user: str, key: str) -> torch.Tensor:
    try:
        return convert(split[user][key], user)
    except (ValueError, TypeError, RuntimeError, OverflowError) as err:
        raise DataInvalid(f"{split[user]['file']}: user {user!r}: {err}; fix or replace this shard") from None


def leaf_source(
    users: list[str], train: dict, test: dict, to_x, to_y, num_classes: int, kind: str, to_test_x=None, **extra
) -> SourceData:
    """A SourceData with natural users from LEAF splits, given how to encode x (`to_test_x` for
    the test split, if it differs) and y."""
    train_x, train_y, train_users = stack_users(users, train, to_x, to_y)
    test_x, test_y, test_users = stack_users(users, test, to_test_x or to_x, to_y)
    for split, y, owner in ((train, train_y, train_users), (test, test_y, test_users)):
        bad = ((y < 0) | (y >= num_classes)).nonzero()
        if len(bad):
            user = users[int(owner[bad[0, 0]])]
            raise DataInvalid(
                f"{split[user]['file']}: user {user!r} has label {int(y[bad[0, 0]])}, "
                f"outside 0..{num_classes - 1}; fix or replace this shard"
            )
    return SourceData(
        train_x, train_y, test_x, test_y, num_classes, kind, train_users, users, test_users=test_users, **extra
    )


def cached_leaf_source(root: Path | None, name: str, build: Callable[[], SourceData], *key: object) -> SourceData:
    """`build()` once per version of the LEAF files (parsing large JSON takes seconds), then
    read back from the tensor cache."""
    where = leaf_location(root, name)

    def to_tensors() -> dict:
        s = build()
        return {
            "train_x": s.train_x,
            "train_y": s.train_y,
            "test_x": s.test_x,
            "test_y": s.test_y,
            "train_users": s.train_users,
            "test_users": s.test_users,
            "user_names": s.user_names,
            "num_classes": s.num_classes,
            "kind": s.kind,
        }

    t = cached_tensors(name, cache_key(name, where.checksum(), *key, CACHE_LAYOUT), to_tensors)
    return SourceData(
        t["train_x"],
        t["train_y"],
        t["test_x"],
        t["test_y"],
        t["num_classes"],
        t["kind"],
        t["train_users"],
        list(t["user_names"]),
        test_users=t["test_users"],
    )
