"""Downloading dataset files from their official URLs (urllib only), into the data root."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
from pathlib import Path

from benchmark.errors import UserError

# dataset -> (url, file name under the data root); datasets without a direct URL are built by LEAF
DOWNLOADS: dict[str, list[tuple[str, str]]] = {
    "cifar10": [("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz", "cifar-10-python.tar.gz")],
    "cifar100": [("https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz", "cifar-100-python.tar.gz")],
    "tiny_imagenet": [("http://cs231n.stanford.edu/tiny-imagenet-200.zip", "tiny-imagenet-200.zip")],
    "a9a": [("https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/a9a", "a9a"),
            ("https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/a9a.t", "a9a.t")],
}


def download(url: str, dest: Path, timeout: float = 30) -> Path:
    """Fetch `url` to `dest` (via a .partial file, so an interrupted download is never used)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(tmp, "wb") as out:
            shutil.copyfileobj(response, out, 1 << 20)
    except (urllib.error.URLError, OSError, TimeoutError) as err:
        tmp.unlink(missing_ok=True)
        raise UserError(f"could not download {url} ({err}). Download it on a machine that is online and put it at {dest}") from None
    tmp.replace(dest)
    return dest
