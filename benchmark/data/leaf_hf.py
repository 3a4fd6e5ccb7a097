"""The Flower Datasets route for LEAF's datasets: the hub tables Flower publishes (flwrlabs/femnist,
flwrlabs/celeba, flwrlabs/shakespeare), one row per sample with the natural user in a column.

Those tables are not split into each user's train and test samples, so the split is LEAF's by-sample
rule (`leaf_data.sampling.split_by_sample`: per user with 2+ samples, max(1, int(0.9 n)) drawn for
training with `random.Random(seed)`, 1 of 2); Shakespeare's is LEAF's by-position rule with no test
window overlapping a training one (`leaf_data.shakespeare.split_user`). Every split the table has
(train, and valid/test where present) is pooled first. Users are ordered by first appearance.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

from benchmark.data.archive import Found, dataset_missing, expected
from benchmark.data.cache import cache_key, cached_tensors
from benchmark.data.hf import has_local_copy, open_hf
from benchmark.data.images import channel_stats
from benchmark.data.leaf import CACHE_LAYOUT, leaf_location
from benchmark.data.source import SourceData
from benchmark.errors import DataInvalid, DatasetMissing, UserError
from benchmark.lazy import torch
from benchmark.params import StrictParams

BATCH = 4096  # rows decoded at a time


class LeafRouteParams(StrictParams):
    """Where a LEAF dataset comes from: LEAF's JSON (`leaf`), a Flower hub table (`hf`), or the first present."""

    format: Literal["auto", "leaf", "hf"] = "auto"
    hf_dir: str | None = None  # local copy under the root (save_to_disk folder or parquet), default <name>-hf
    hf_id: str | None = None  # hub id read when no local copy exists (online); format hf: Flower's by default
    hf_split_seed: int = Field(0, ge=0)  # hf only: seed of LEAF's per-user train/test split
    # LEAF JSON only: the clients' order, which the participation draw picks from. files: as the users first
    # appear in the JSON shards sorted by name; name: sorted user ids, as LEAF's models/utils/model_utils.py
    user_order: Literal["files", "name"] = "files"


@dataclass(frozen=True)
class HubTable:
    """A Flower hub table's columns and how to turn a batch of them into arrays."""

    name: str
    hub_id: str
    user_key: str
    x_key: str
    y_key: str
    encode: Callable[[list, list], tuple[np.ndarray, np.ndarray]]  # (x values, y values) of a batch
    positional: bool = False  # Shakespeare: split by position (windows overlap), not at random
    min_samples: int = 0  # users with fewer rows are left out first (CelebA: LEAF's 5 images)
    leaf_floats: bool = False  # FEMNIST: uint8 rows become LEAF's floats (byte / 255) once split


BYTE_FLOATS = (np.arange(256) / 255).astype(np.float32)  # LEAF's byte / 255, as its JSON gives them


def route(table: HubTable, p: LeafRouteParams, root: Path | None) -> tuple[str, Found | str]:
    """("leaf" | "hf", where): the first source present, LEAF's JSON first (format auto)."""
    problems = []
    if p.format in ("auto", "leaf"):
        try:
            return "leaf", replace(leaf_location(root, table.name), route="LEAF JSON")
        except DatasetMissing as missing:
            problems.append(str(missing))
    if p.format in ("auto", "hf"):
        hf_dir = p.hf_dir or f"{table.name}-hf"
        local = root is not None and has_local_copy(root / hf_dir)
        if (local or p.hf_id or p.format == "hf") and p.user_order != "files":
            raise UserError(f"{table.name}: user_order applies to LEAF's JSON, not to Flower's {table.hub_id} table")
        if local:
            return "hf", Found(root / hf_dir, route=f"Flower's {table.hub_id} copy")
        if p.hf_id or p.format == "hf":  # asking for hf names Flower's table; auto never goes online unasked
            return "hf", p.hf_id or table.hub_id
        problems.append(
            f"format hf: {expected(root, hf_dir)} (Flower's {table.hub_id} as a save_to_disk folder or its parquet "
            f"files), or format: hf (reads {table.hub_id} when online; pip install 'fedbench[hf]')"
        )
    raise dataset_missing(
        f"dataset {table.name!r} (format {p.format}): nothing found.\n  " + "\n  ".join(problems), root
    )


def read_table(table: HubTable, dd, source: Path | str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(user of every row, x, y) over every split of the hub table `dd`, decoded a batch at a time."""
    users, xs, ys = [], [], []
    for split in dd:
        cols = set(dd[split].column_names)
        missing = [k for k in (table.user_key, table.x_key, table.y_key) if k not in cols]
        if missing:
            raise DatasetMissing(
                f"{source}/{split}: not {table.hub_id}'s schema: no column {', '.join(missing)} (has {sorted(cols)})"
            )
        for batch in dd[split].iter(batch_size=BATCH):
            users.extend(str(u) for u in batch[table.user_key])
            x, y = table.encode(batch[table.x_key], batch[table.y_key])
            xs.append(x), ys.append(y)
    if not users:
        raise DatasetMissing(f"{source}: the table has no rows")
    return users, np.concatenate(xs), np.concatenate(ys)


def leaf_split(
    users: list[str], positional: bool, seed: int, min_samples: int = 0
) -> tuple[list[str], list[np.ndarray], list[np.ndarray]]:
    """(users kept, train rows per user, test rows per user) by LEAF's by-sample rule, users with
    fewer than `min_samples` rows left out first."""
    from leaf_data.sampling import shard, split_by_sample
    from leaf_data.shakespeare import BuildOptions, split_user

    rows: dict[str, list[int]] = {}
    for i, u in enumerate(users):
        rows.setdefault(u, []).append(i)
    rows = {u: r for u, r in rows.items() if len(r) >= min_samples}
    if positional:
        opts, kept, train, test = BuildOptions(), [], [], []
        for u, r in rows.items():
            (tr, _), (te, _) = split_user(r, r, opts)
            if tr and te:
                kept.append(u), train.append(np.array(tr)), test.append(np.array(te))
        return kept, train, test
    blob = shard({u: {"x": np.array(r), "y": np.array(r)} for u, r in rows.items()})
    tr, te = split_by_sample(blob, 0.9, random.Random(seed))
    return tr["users"], [tr["user_data"][u]["x"] for u in tr["users"]], [te["user_data"][u]["x"] for u in tr["users"]]


def hub_source(
    table: HubTable, where: Found | str, seed: int, num_classes: int, kind: str, tag: object = None
) -> SourceData:
    """SourceData of a hub table, split per user as LEAF does, cached by the local copy's checksum
    (or the hub table's fingerprint). uint8 images get the training split's channel mean/std, as
    every image dataset here."""

    def build(dd=None) -> dict:
        source = where.path if isinstance(where, Found) else where
        row_users, x, y = read_table(table, dd or open_hf(source), source)
        if len(y) and (int(y.min()) < 0 or int(y.max()) >= num_classes):
            raise DataInvalid(f"{source}: labels outside 0..{num_classes - 1} in column {table.y_key!r}")
        users, train, test = leaf_split(row_users, table.positional, seed, table.min_samples)
        if not users:
            raise DatasetMissing(f"{source}: no user has samples for both training and testing by LEAF's split")
        tr, te = np.concatenate(train), np.concatenate(test)
        owner = np.repeat(np.arange(len(users)), [len(r) for r in train])
        test_owner = np.repeat(np.arange(len(users)), [len(r) for r in test])
        rows = (lambda r: BYTE_FLOATS[x[r]]) if table.leaf_floats else (lambda r: x[r])  # noqa: E731
        out = {
            "train_x": torch.from_numpy(rows(tr)),
            "train_y": torch.from_numpy(y[tr]),
            "test_x": torch.from_numpy(rows(te)),
            "test_y": torch.from_numpy(y[te]),
            "train_users": torch.from_numpy(owner),
            "test_users": torch.from_numpy(test_owner),
            "user_names": users,
        }
        if out["train_x"].dtype == torch.uint8:
            out["mean"], out["std"] = channel_stats(out["train_x"])
        return out

    if isinstance(where, Found):
        version, make = where.checksum(), build
    else:  # a hub id: the version is what the datasets library resolved it to
        dd = open_hf(where)
        version, make = [where] + [getattr(dd[s], "_fingerprint", "") for s in dd], lambda: build(dd)
    t = cached_tensors(f"{table.name}-hf", cache_key(table.name, version, seed, tag, CACHE_LAYOUT), make)
    mean, std = (tuple(t[k].tolist()) if k in t else None for k in ("mean", "std"))
    return SourceData(
        t["train_x"],
        t["train_y"],
        t["test_x"],
        t["test_y"],
        num_classes,
        kind,
        t["train_users"],
        list(t["user_names"]),
        mean=mean,
        std=std,
        test_users=t["test_users"],
    )
