"""The fedbench cache: extracted archives and decoded tensors, never written into the data root.

Decoded datasets are stored as tensor files keyed by a checksum of their source files, so a
second load skips decoding; they are read back with `torch.load(weights_only=True)`, or as .npz
files (`cached_arrays`) where the reader should not need torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from benchmark.lazy import torch

CACHE_ENV = "FEDBENCH_CACHE"


def cache_dir() -> Path:
    """$FEDBENCH_CACHE, else ~/.cache/fedbench."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "fedbench"


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def files_fingerprint(files: Iterable[Path], base: Path) -> str:
    """Checksum of (relative name, size, mtime) of `files`: cheap, and changes when any file does."""
    h = hashlib.sha256()
    for f in sorted(files):
        st = f.stat()
        h.update(f"{f.relative_to(base)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def tree_fingerprint(directory: Path) -> str:
    return files_fingerprint((p for p in directory.rglob("*") if p.is_file()), directory)


def cache_key(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]


def tensor_cache_path(tag: str, key: str) -> Path:
    return cache_dir() / "tensors" / f"{tag}-{key}.pt"


def cached_tensors(tag: str, key: str, build: Callable[[], dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The tensors cached under (tag, key), else `build()` them and store them atomically."""
    return _cached("tensor", tensor_cache_path(tag, key), lambda f: torch.load(f, weights_only=True), torch.save, build)


def cached_arrays(tag: str, key: str, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """numpy arrays cached under (tag, key) as an uncompressed .npz (no pickles: read back without
    importing torch, in milliseconds), else `build()` them and store them atomically."""

    def read(path: Path) -> dict[str, np.ndarray]:
        with np.load(path, allow_pickle=False) as npz:
            return {name: npz[name] for name in npz.files}

    def write(arrays: dict[str, np.ndarray], path: Path) -> None:
        with open(path, "wb") as f:  # a file object: np.savez would append .npz to a path
            np.savez(f, **arrays)

    return _cached("array", cache_dir() / "arrays" / f"{tag}-{key}.npz", read, write, build)


def _cached(
    kind: str, path: Path, read: Callable[[Path], dict], write: Callable[[dict, Path], None], build: Callable[[], dict]
):
    if path.is_file():
        try:
            return read(path)
        except Exception as err:  # a truncated or foreign file: rebuild, but say so
            warnings.warn(
                f"ignoring unreadable {kind} cache {path} ({type(err).__name__}: {err}); rebuilding it", stacklevel=3
            )
    built = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    write(built, tmp)
    tmp.replace(path)
    return built
