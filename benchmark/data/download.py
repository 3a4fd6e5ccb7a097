"""Downloading dataset files from their official URLs (urllib only), into the data root; each
dataset's spec names its URLs (`DatasetSpec.downloads`)."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
from pathlib import Path

from benchmark.errors import UserError


def download(url: str, dest: Path, timeout: float = 30) -> Path:
    """Fetch `url` to `dest` (via a .partial file, so an interrupted download is never used)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(tmp, "wb") as out:
            shutil.copyfileobj(response, out, 1 << 20)
    except (urllib.error.URLError, OSError, TimeoutError) as err:
        tmp.unlink(missing_ok=True)
        raise UserError(
            f"could not download {url} ({err}). Download it on a machine that is online and put it at {dest}"
        ) from None
    tmp.replace(dest)
    return dest
