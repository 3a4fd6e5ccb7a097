"""Finding a dataset's files: an extracted directory under the data root, or an archive there.

Archives (.tar.gz, .tgz, .tar, .zip) are extracted once into the cache, in a folder named by
the archive's sha256, so the data root is only ever read.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import shutil
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmark.data.cache import cache_dir, sha256_file, tree_fingerprint
from benchmark.errors import DatasetMissing

_DONE = ".fedbench-extracted"
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
_PEEK = contextvars.ContextVar("fedbench_peek_archives", default=False)


@contextlib.contextmanager
def peek_archives():
    """Inside this block `locate` reports an archive it finds without extracting it (for listings)."""
    token = _PEEK.set(True)
    try:
        yield
    finally:
        _PEEK.reset(token)


@dataclass(frozen=True)
class Found:
    """What the user provided (`origin`: a directory, file or archive) and, for an archive, the
    folder inside it with the expected layout. Archives are extracted only when `path` is first
    needed, so a load served from the tensor cache never extracts."""

    origin: Path
    relative: str = ""
    archive_sha256: str | None = None
    also: tuple[Path, ...] = ()  # further files the dataset reads (a9a's test split), for staging
    route: str = ""  # which of a dataset's formats this is, where it has several (`fedbench data ls`)

    @property
    def path(self) -> Path:
        """The directory (or file) with the expected layout."""
        if self.archive_sha256 is None:
            return self.origin
        folder = extract(self.origin, self.archive_sha256)[0] / self.relative
        if not folder.is_dir():
            raise DatasetMissing(f"{self.origin} does not contain {self.relative}/ (wrong archive?)")
        return folder

    def checksum(self) -> str:
        """sha256 of an archive or file, or a name+size+mtime checksum of a directory tree."""
        if self.archive_sha256:
            return self.archive_sha256
        return sha256_file(self.origin) if self.origin.is_file() else tree_fingerprint(self.origin)


def extract(archive: Path, sha: str | None = None) -> tuple[Path, str]:
    """Extract `archive` into the cache (once); returns (extraction folder, archive sha256)."""
    sha = sha or sha256_file(archive)
    dest = cache_dir() / "extracted" / sha[:20]
    if (dest / _DONE).is_file():
        return dest, sha
    tmp = dest.with_name(f"{dest.name}.partial{os.getpid()}")  # per process: concurrent jobs may extract too
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        unpack_into(archive, tmp)
    except DatasetMissing:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    (tmp / _DONE).write_text(str(archive))
    try:
        tmp.rename(dest)
    except OSError:  # another process finished first: use its copy
        shutil.rmtree(tmp, ignore_errors=True)
        if not (dest / _DONE).is_file():
            raise
    return dest, sha


def unpack_into(archive: Path, folder: Path) -> None:
    """Extract a .zip or tar archive into `folder`, refusing members that would land outside it."""
    import tarfile  # here: every run imports this module (a9a's loader), few extract

    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(folder)  # zipfile strips absolute paths and '..'
        else:
            with tarfile.open(archive) as tf:
                tf.extractall(folder, filter="data")  # refuses links/paths escaping the folder
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as err:
        raise DatasetMissing(f"cannot extract {archive}: {type(err).__name__}: {err}; re-download it") from None


def locate(root: Path | None, relative: str, archives: Sequence[str] = ()) -> Found | None:
    """`<root>/<relative>` if it is a directory, else `<relative>` inside the first of
    `<root>/<archive>` that exists; None if neither is there."""
    if root is None:
        return None
    direct = root / relative
    if direct.is_dir():
        return Found(direct)
    for name in archives:
        archive = root / name
        if archive.is_file():
            return Found(archive) if _PEEK.get() else Found(archive, relative, sha256_file(archive))
    return None


UNSET_ROOT_HINT = "<root> is $FEDBENCH_DATA or the dataset's 'root:' in the suite; neither is set"


def root_text(root: Path | None) -> str:
    """A data root in messages: the path, or <root> when none is set (dataset_missing() explains it)."""
    return str(root) if root is not None else "<root>"


def dataset_missing(message: str, root: Path | None) -> DatasetMissing:
    """DatasetMissing with `message`, saying what <root> stands for when no root is set."""
    return DatasetMissing(message + (f"\n  {UNSET_ROOT_HINT}" if root is None else ""))


def expected(root: Path | None, relative: str, archives: Sequence[str] = ()) -> str:
    """One line of 'what goes where' for error messages."""
    where = root_text(root)
    alt = "".join(f" or {where}/{a}" for a in archives)
    return f"{where}/{relative}/{alt}"
