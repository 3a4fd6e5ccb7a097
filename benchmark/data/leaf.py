"""Reading LEAF JSON datasets: `<root>/<name>/data/{train,test}/*.json`, one client per LEAF user.

Each shard is {"users": [...], "num_samples": [...], "user_data": {user: {"x": [...], "y": [...]}}}.
Users are ordered as they first appear in the (sorted) train shards, which is what "first N
users" selects from.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path

from benchmark.data.archive import Found, locate
from benchmark.data.cache import cache_key, cached_tensors
from benchmark.data.source import SourceData, require_dir
from benchmark.errors import DataInvalid, DatasetMissing
from benchmark.lazy import torch


def read_leaf_split(directory: Path) -> dict[str, dict]:
    """user -> {"x": [...], "y": [...]} merged over every JSON shard in `directory`."""
    shards = sorted(directory.glob("*.json"))
    if not shards:
        raise DatasetMissing(f"no LEAF JSON shards (*.json) in {directory}")
    users: dict[str, dict] = {}
    for shard in shards:
        try:
            blob = json.loads(shard.read_text())
            for user in blob["users"]:
                data = blob["user_data"][user]
                entry = users.setdefault(user, {"x": [], "y": [], "file": shard})
                entry["x"].extend(data["x"])
                entry["y"].extend(data["y"])
            warn_if_counts_disagree(shard, blob)
        except (
            ValueError,
            KeyError,
            TypeError,
            AttributeError,
            RecursionError,
        ) as err:  # not UTF-8, not JSON, not LEAF
            raise DatasetMissing(f"{shard} is not a LEAF JSON shard ({type(err).__name__}: {err})") from None
    return users


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


def load_leaf_users(root: Path | None, name: str) -> tuple[list[str], dict, dict]:
    """(users with both train and test data in first-seen order, train users, test users)."""
    train_dir, test_dir = leaf_dirs(root, name)
    train, test = read_leaf_split(train_dir), read_leaf_split(test_dir)
    users = [u for u in train if u in test]
    if not users:
        raise DatasetMissing(f"{name}: no user has both train and test data under {train_dir.parent}")
    return users, train, test


def integer_labels(y: list, user: str) -> torch.Tensor:
    """LEAF labels as int64; a float (3.5), bool or string label is an error, never truncated."""
    if not isinstance(y, list):
        raise ValueError(f"labels are {type(y).__name__}, not a list")
    bad = next((i for i, v in enumerate(y) if type(v) is not int), None)  # bool is an int subclass
    if bad is not None:
        raise ValueError(f"label {y[bad]!r} (example {bad}) is not an integer")
    return torch.tensor(y, dtype=torch.long)


def stack_users(
    users: list[str], split: dict, to_x: Callable[[list, str], torch.Tensor], to_y: Callable[[list, str], torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Concatenate `users`' examples of one split: (x, y, user index of every example). Whatever
    an encoder refuses (ragged or misshapen inputs, non-integer labels) names the shard and user."""
    xs, ys, us = [], [], []
    for k, u in enumerate(users):
        try:
            xs.append(to_x(split[u]["x"], u))
            ys.append(to_y(split[u]["y"], u))
            if len(xs[-1]) != len(ys[-1]):
                raise ValueError(f"{len(xs[-1])} inputs but {len(ys[-1])} labels")
        except (ValueError, TypeError, RuntimeError, OverflowError) as err:
            raise DataInvalid(f"{split[u]['file']}: user {u!r}: {err}; fix or replace this shard") from None
        us.append(torch.full((len(ys[-1]),), k, dtype=torch.long))
    return torch.cat(xs), torch.cat(ys), torch.cat(us)


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
    return SourceData(train_x, train_y, test_x, test_y, num_classes, kind, train_users, users, **extra)


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
            "user_names": s.user_names,
            "num_classes": s.num_classes,
            "kind": s.kind,
        }

    t = cached_tensors(name, cache_key(name, where.checksum(), *key), to_tensors)
    return SourceData(
        t["train_x"],
        t["train_y"],
        t["test_x"],
        t["test_y"],
        t["num_classes"],
        t["kind"],
        t["train_users"],
        list(t["user_names"]),
    )
