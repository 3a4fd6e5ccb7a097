"""Writing LEAF's train/test JSON shards (`<out>/data/{train,test}/*.json`), one shard at a time."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

# LEAF writes a pixel as json.dump of (byte / 255) in float64; these are those 256 texts
PIXEL_TEXT = np.array([json.dumps(k / 255) for k in range(256)], dtype=object)


def pixels_json(x: np.ndarray) -> str:
    """JSON of uint8 images (n, 784) as LEAF's lists of byte/255 floats, without a float object per pixel."""
    rows = np.asarray(x, dtype=np.uint8).reshape(len(x), -1) if len(x) else []
    return "[" + ",".join("[" + ",".join(PIXEL_TEXT[row]) + "]" for row in rows) + "]"


def plain_json(values) -> str:
    return json.dumps(values.tolist() if isinstance(values, np.ndarray) else values)


def shard_text(blob: dict, x_text: Callable = plain_json) -> str:
    """`blob` as LEAF's JSON object (users, num_samples, user_data) with x written by `x_text`."""
    entries = ",".join(
        f'{json.dumps(u)}:{{"x":{x_text(d["x"])},"y":{plain_json(d["y"])}}}' for u, d in blob["user_data"].items()
    )
    return f'{{"users":{json.dumps(blob["users"])},"num_samples":{json.dumps(blob["num_samples"])},"user_data":{{{entries}}}}}'


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.partial{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)


def write_splits(
    out: Path,
    pairs: Iterable[tuple[dict, dict]],
    name: str,
    x_text: Callable = plain_json,
    numbers: Sequence[int] | None = None,
) -> dict[str, int]:
    """Write each (train, test) shard pair as `<out>/data/{train,test}/all_data_<i>_<name>_{train,test}.json`
    (i: the all_data shard it comes from, `numbers` in the order drawn; default 0, 1, ...), replacing an
    earlier build's shards (they would be read with these); returns counts."""
    folders = {split: out / "data" / split for split in ("train", "test")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
        for earlier in folder.glob("*.json"):
            earlier.unlink()
    stats = {"train_users": 0, "test_users": 0, "train_samples": 0, "test_samples": 0}
    for k, pair in enumerate(pairs):
        i = numbers[k] if numbers is not None else k
        for split, blob in zip(("train", "test"), pair):
            if blob["users"]:
                write_atomic(folders[split] / f"all_data_{i}_{name}_{split}.json", shard_text(blob, x_text))
            stats[f"{split}_users"] += len(blob["users"])
            stats[f"{split}_samples"] += sum(blob["num_samples"])
    return stats
