"""LEAF JSON datasets: `<root>/<name>/data/{train,test}/*.json`, one client per LEAF user.

Each shard is {"users": [...], "num_samples": [...], "user_data": {user: {"x": [...], "y": [...]}}}.
Users are ordered as they first appear in the (sorted) train shards, which is what "first N
users" selects from.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from benchmark.data.source import SourceData, register_dataset, require_dir
from benchmark.errors import DatasetMissing

FEMNIST_HELP = (
    "Build FEMNIST with LEAF (github.com/TalwalkarLab/leaf, data/femnist: ./preprocess.sh -s niid "
    "--sf 0.05 -k 0 -t sample) and put its data/ folder at <root>/femnist/data/{train,test}/*.json."
)


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
                entry = users.setdefault(user, {"x": [], "y": []})
                entry["x"].extend(data["x"])
                entry["y"].extend(data["y"])
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise DatasetMissing(f"{shard} is not a LEAF JSON shard ({type(err).__name__}: {err})") from None
    return users


def leaf_dirs(root: Path | None, name: str) -> tuple[Path, Path]:
    base = require_dir(root / name / "data" if root else None, name, f"{name}/data/{{train,test}}/*.json")
    return require_dir(base / "train", name, "data/train/*.json"), require_dir(base / "test", name, "data/test/*.json")


def load_leaf_users(root: Path | None, name: str) -> tuple[list[str], dict, dict]:
    """(users with both train and test data in first-seen order, train users, test users)."""
    train_dir, test_dir = leaf_dirs(root, name)
    train, test = read_leaf_split(train_dir), read_leaf_split(test_dir)
    users = [u for u in train if u in test]
    if not users:
        raise DatasetMissing(f"{name}: no user has both train and test data under {train_dir.parent}")
    return users, train, test


@register_dataset("femnist", FEMNIST_HELP)
def load_femnist(params: dict, root) -> SourceData:
    if params:
        raise ValueError(f"femnist takes no params, got {sorted(params)}")
    users, train, test = load_leaf_users(root, "femnist")

    def stack(split: dict, with_users: bool):
        xs, ys, us = [], [], []
        for k, u in enumerate(users):
            xs.append(torch.tensor(split[u]["x"], dtype=torch.float32).reshape(-1, 1, 28, 28))
            ys.append(torch.tensor(split[u]["y"], dtype=torch.long))
            us.append(torch.full((len(split[u]["y"]),), k, dtype=torch.long))
        return torch.cat(xs), torch.cat(ys), (torch.cat(us) if with_users else None)

    train_x, train_y, train_users = stack(train, True)
    test_x, test_y, _ = stack(test, False)
    return SourceData(train_x, train_y, test_x, test_y, 62, "image", train_users, users)
