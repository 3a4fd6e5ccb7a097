"""The code a result came from: fedbench's version and a hash of its Python sources. Every
summary.json records it, so `fedbench check --reuse` reruns a job whose results another version
of the code produced (job ids cover the settings, not the code)."""

from __future__ import annotations

import functools
import hashlib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # benchmark/


@functools.cache
def code_fingerprint() -> str:
    """`<version>+<first 12 hex digits of sha256 over benchmark/**/*.py, paths and contents>`."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    try:
        release = version("fedbench")
    except PackageNotFoundError:  # run from a checkout that was never installed
        release = "unknown"
    return f"{release}+{digest.hexdigest()[:12]}"
