"""Building LEAF FEMNIST from NIST SD19's by_class and by_write (zips or folders), restartably.

Stages, each kept under `<out>/work/` once complete, so an interrupted build resumes where it stopped:
1. md5 of every by_class and by_write image (`class_hashes.tsv`, `writer_hashes.tsv`);
2. writers matched to classes by hash (`nist.match_writers`) and their images converted to LEAF's
   28x28 pixels, 100 writers per `all_data_<i>.npz` (LEAF's all_data shards; uint8, byte/255 = LEAF's x);
3. LEAF's sampling, user removal and split (`sampling.py`), written as LEAF's JSON.

LEAF's group_by_writer.py lists the first image of every writer but the first twice (it starts a
writer's list with that image, then appends it again); each image is kept once here, so a full
build has (writers - 1) fewer samples than LEAF's published count.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np

from leaf_data import nist
from leaf_data.leaf_json import pixels_json, write_atomic, write_splits
from leaf_data.sampling import LeafOptions, sample_and_remove, split_shards

WRITERS_PER_SHARD = 100  # LEAF's MAX_WRITERS


def quiet(items: Iterable, description: str, total: int) -> Iterable:
    return items


def progress_bar(items: Iterable, description: str, total: int) -> Iterable:
    from rich.progress import track

    return track(items, description=description, total=total, transient=True)


def hashes(
    work: Path, part: nist.NistPart, listed: list[tuple[str, str]], show: Callable
) -> list[tuple[str, str, str]]:
    """(key, member, md5) of `listed` (key = class or writer), from `work` when already computed."""
    path = work / f"{part.name}_hashes.tsv"
    if not path.is_file():
        digests = show(nist.md5s(part, [m for _, m in listed]), f"hashing {part.name}", len(listed))
        write_atomic(path, "".join(f"{k}\t{m}\t{d}\n" for (k, m), d in zip(listed, digests, strict=True)))
    return [tuple(line.split("\t")) for line in path.read_text().splitlines()]


def convert(work: Path, by_write: nist.NistPart, writers: dict[str, list[tuple[str, int]]], show: Callable) -> int:
    """Write the missing `all_data_<i>.npz` shards (100 writers each, LEAF's order); returns their number."""
    names = list(writers)
    chunks = [names[i : i + WRITERS_PER_SHARD] for i in range(0, len(names), WRITERS_PER_SHARD)]
    todo = [(i, chunk) for i, chunk in enumerate(chunks) if not (work / f"all_data_{i}.npz").is_file()]
    for i, chunk in show(todo, "converting images", len(todo)):
        members = [m for w in chunk for m, _ in writers[w]]
        x = np.stack([nist.to_pixels(png) for png in by_write.read(members)])
        y = np.array([label for w in chunk for _, label in writers[w]], dtype=np.int64)
        counts = np.array([len(writers[w]) for w in chunk], dtype=np.int64)
        tmp = work / f"all_data_{i}.partial.npz"
        np.savez(tmp, x=x, y=y, users=np.array(chunk), counts=counts)
        tmp.replace(work / f"all_data_{i}.npz")
    return len(chunks)


def read_shard(path: Path) -> dict:
    """An all_data npz shard as a LEAF object whose users' x are uint8 (n, 784) arrays."""
    with np.load(path) as z:
        x, y, users, counts = z["x"], z["y"], [str(u) for u in z["users"]], z["counts"]
    ends = np.cumsum(counts)
    data = {u: {"x": x[e - n : e], "y": y[e - n : e]} for u, n, e in zip(users, counts, ends)}
    return {"users": users, "num_samples": counts.tolist(), "user_data": data}


def all_data(work: Path, count: int, opts: LeafOptions) -> Iterator[dict]:
    return (read_shard(work / f"all_data_{i}.npz") for i in opts.ordered(count))


def check_sources(work: Path, parts: dict[str, nist.NistPart]) -> None:
    """Start `work` afresh when the NIST files differ from the ones its stages were made from."""
    sources = {p.name: [str(p.origin), p.origin.stat().st_size, p.origin.stat().st_mtime_ns] for p in parts.values()}
    marker = work / "sources.json"
    if marker.is_file() and json.loads(marker.read_text()) != sources:
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    write_atomic(marker, json.dumps(sources))


def build(root: Path, out: Path, opts: LeafOptions, show: Callable = progress_bar) -> dict[str, int]:
    """FEMNIST from the NIST parts under `root` into `<out>/data/{train,test}/*.json`; returns counts."""
    parts = nist.find_parts(root)
    if parts is None:
        raise FileNotFoundError(f"{root}: needs by_class.zip and by_write.zip (or the extracted folders)")
    work = out / "work"
    check_sources(work, parts)
    class_hashes = hashes(work, parts["by_class"], nist.class_images(parts["by_class"].members()), show)
    writer_hashes = hashes(work, parts["by_write"], nist.writer_images(parts["by_write"].members()), show)
    writers, unmatched = nist.match_writers(class_hashes, writer_hashes)
    shards = convert(work, parts["by_write"], writers, show)
    kept = sample_and_remove(all_data(work, shards, opts), opts)
    if opts.split == "user":  # the user split draws over all kept users at once
        kept = list(kept)
    counts = [len(b["users"]) for b in kept] if opts.split == "user" else None
    stats = write_splits(out, split_shards(kept, opts, counts), opts.tag(), pixels_json, opts.ordered(shards))
    return {"writers": len(writers), "samples": sum(len(v) for v in writers.values()), "unmatched": unmatched} | stats
