"""Datasets for Ray nodes that lack them, staged once per node into <cache>/staged/<key>/.

A staged folder is a data root (the dataset's files under their usual names, or a URI's archive
unpacked), so the loaders read it as they read $FEDBENCH_DATA. Its source is either
- a URI the user names (`--data-uri`, a dataset's `uri:`), fetched by the node, or
- by default the driver's own copy: its files packed into one tar, put once into Ray's object
  store (keyed by the tar's sha256) and fetched only by the nodes that need it.
Staging holds a file lock, so concurrent jobs on one node stage once, and checks the payload's
sha256 before unpacking it. This module does not import Ray: the executor passes `put`/`download`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmark.data.archive import ARCHIVE_SUFFIXES, Found, peek_archives, unpack_into
from benchmark.data.cache import cache_dir, sha256_file
from benchmark.data.source import DATA_ENV, DATASETS, data_root
from benchmark.data.uri import DataUri, parse_data_uri
from benchmark.errors import DataInvalid, DatasetMissing, UserError
from benchmark.store.locks import FileLock
from benchmark.suite.expand import Job

STAGED_MARK = ".fedbench-staged"  # written last: a folder without it is incomplete
DEFAULT_SHIP_MAX_MB = 1024.0
MB = 2**20


@dataclass(frozen=True)
class Offer:
    """How a node that lacks `dataset` gets it: fetched from `uri`, read from the object store
    (`ref`), or not at all (`refused` says why)."""

    dataset: str
    source: str = ""  # for messages: the URI, or the driver's path
    file_name: str = ""  # what the payload is saved as (an archive is unpacked)
    sha256: str | None = None  # the payload's; None for an unpinned URI
    size: int = 0
    uri: DataUri | None = None
    ref: Any = None  # a Ray ObjectRef of the tar's bytes
    refused: str = ""

    @property
    def key(self) -> str:
        """The staged folder's name: the content's checksum, else (unpinned URI) the URI's."""
        return (self.sha256 or hashlib.sha256(self.source.encode()).hexdigest())[:24]


def node_fixes(dataset: str) -> str:
    return (
        f"either run `fedbench data prepare {dataset}` on that node (with {DATA_ENV} set for its Ray processes), "
        f"or name a URI the nodes can fetch it from: --data-uri {dataset}=URI (or `uri:` in the suite's dataset entry)"
    )


def parse_uri_options(values: tuple[str, ...] | list[str], datasets: list[str]) -> dict[str, DataUri]:
    """`--data-uri NAME=URI` (repeatable), or one bare URI for a suite that uses one dataset."""
    uris: dict[str, DataUri] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or "://" in name:  # a bare URI (its query may hold '=')
            if len(datasets) != 1:
                raise UserError(
                    f"--data-uri {value}: the suite uses {len(datasets)} datasets ({', '.join(datasets)}); "
                    "say which one: --data-uri NAME=URI"
                )
            name, text = datasets[0], value
        if name not in DATASETS:
            raise UserError(f"--data-uri {value}: unknown dataset {name!r}; known: {', '.join(DATASETS.names())}")
        try:
            uris[name] = parse_data_uri(text)
        except ValueError as err:
            raise UserError(f"--data-uri: {err}") from None
    return uris


def dataset_files(name: str, root: Path | None) -> tuple[Path, list[Path]] | None:
    """(origin, files) of dataset `name` under data root `root`; None when it needs no files
    here (generated, or read from the Hugging Face hub). DatasetMissing when they are not there."""
    if (found := _found(name, root)) is None:
        return None
    files: list[Path] = []
    for path in (found.origin, *found.also):
        files += sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return found.origin, files


def _found(name: str, root: Path | None) -> Found | None:
    """Where the dataset's files are, without extracting or listing them (DatasetMissing if absent)."""
    if (probe := DATASETS.require(name).probe) is None:
        return None
    with peek_archives():
        found = probe(root)
    return found if isinstance(found, Found) else None


def pack(files: list[Path], root: Path) -> bytes:
    """An uncompressed tar of `files`, named as under `root`, so it unpacks into a data root."""
    import tarfile  # here: every run imports this module (the executors' registry); only a Ray run ships data

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for f in files:
            info = tar.gettarinfo(f, arcname=str(f.relative_to(root)))
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with open(f, "rb") as fh:
                tar.addfile(info, fh)
    return buf.getvalue()


def make_offers(
    jobs: list[Job], uris: dict[str, DataUri], max_bytes: float, put: Callable[[bytes], Any]
) -> dict[tuple[str, str | None], Offer]:
    """(dataset, root) -> Offer for every dataset with files the jobs use: its URI if one is
    named, else the driver's copy packed and `put` (once per content) when it is at most
    `max_bytes`, else a refusal saying why."""
    offers: dict[tuple[str, str | None], Offer] = {}
    shipped: dict[str, Any] = {}  # sha256 -> ref: identical content is put once
    for job in jobs:
        d = job.config.dataset
        if (d.name, d.root) in offers or DATASETS.require(d.name).probe is None:  # generated: nothing to stage
            continue
        uri = uris.get(d.name) or (parse_data_uri(d.uri) if d.uri else None)
        if uri:
            offers[d.name, d.root] = Offer(d.name, uri.url, uri.name, uri.sha256, uri=uri)
            continue
        root = data_root(d.root)
        try:
            found = dataset_files(d.name, root)
        except DatasetMissing:
            offers[d.name, d.root] = Offer(
                d.name, refused=f"the driver has no copy either (under {root or f'${DATA_ENV}, unset'})"
            )
            continue
        if found is None:
            continue
        origin, files = found
        size = sum(f.stat().st_size for f in files)
        if size > max_bytes:
            offers[d.name, d.root] = Offer(
                d.name, refused=f"it is {size / MB:.1f} MB, over --ship-max-mb {max_bytes / MB:g}"
            )
            continue
        payload = pack(files, root)
        sha = hashlib.sha256(payload).hexdigest()
        ref = shipped[sha] if sha in shipped else shipped.setdefault(sha, put(payload))
        offers[d.name, d.root] = Offer(d.name, f"the driver's {origin}", f"{d.name}.tar", sha, len(payload), ref=ref)
    return offers


def on_node(job: Job, offer: Offer | None, download: Callable[[Offer, Path], None]) -> tuple[Job, dict | None]:
    """`job` as it runs on this node: unchanged when the node has its dataset, else reading the
    staged copy (staged now if no job on this node did it before). Also what was staged, if
    this call staged it."""
    d = job.config.dataset
    try:
        _found(d.name, data_root(d.root))
        return job, None
    except DatasetMissing as missing:
        if offer is None or offer.refused:
            why = offer.refused if offer else "no copy was offered"
            raise UserError(
                f"{missing}\n  This node lacks it and the driver did not ship it: {why}. Fix: {node_fixes(d.name)}"
            ) from None
    folder, staged = stage(offer, download)
    dataset = d.model_copy(update={"root": str(folder)})
    return dataclasses.replace(job, config=job.config.model_copy(update={"dataset": dataset})), staged


def stage(offer: Offer, download: Callable[[Offer, Path], None]) -> tuple[Path, dict | None]:
    """The staged folder of `offer`, filled under a lock unless a process on this node filled it
    before; with the record of what was staged when this call did it (else None)."""
    folder = cache_dir() / "staged" / offer.key
    if (folder / STAGED_MARK).is_file():
        return folder, None
    with FileLock(folder.with_name(f"{offer.key}.lock")):
        if (folder / STAGED_MARK).is_file():  # staged while this process waited for the lock
            return folder, None
        partial = folder.with_name(f"{offer.key}.partial")  # only the lock holder writes it
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        try:
            record = _fill(offer, download, partial)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        (partial / STAGED_MARK).write_text(json.dumps(record))
        shutil.rmtree(folder, ignore_errors=True)  # an unmarked leftover
        partial.rename(folder)
    return folder, {**record, "folder": str(folder)}


def _fill(offer: Offer, download: Callable[[Offer, Path], None], folder: Path) -> dict:
    payload = folder / f".download-{offer.file_name}"
    download(offer, payload)
    found = sha256_file(payload)
    if offer.sha256 and found != offer.sha256:
        raise DataInvalid(
            f"dataset {offer.dataset!r} from {offer.source}: corrupt or changed download (sha256 {found}, "
            f"expected {offer.sha256}); nothing was staged"
        )
    size = payload.stat().st_size
    if offer.file_name.endswith(ARCHIVE_SUFFIXES):
        unpack_into(payload, folder)
        payload.unlink()
    else:
        payload.rename(folder / offer.file_name)
    return {
        "dataset": offer.dataset,
        "from": offer.source,
        "sha256": found,
        "bytes": size,
        "verified": offer.sha256 is not None,
    }
