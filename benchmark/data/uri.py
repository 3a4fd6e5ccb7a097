"""Dataset URIs (`--data-uri`, a dataset's `uri:`): where a node without a dataset fetches it.

file:// and http(s):// are read with the standard library; any other scheme (s3://, gs://, ...)
through fsspec, imported only when such a URI is used. A `#sha256=<hex>` fragment pins the
content: a staged file with another checksum is refused (run/staging.py).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from benchmark.errors import UserError

BUILTIN_SCHEMES = ("file", "http", "https")
_SHA256 = re.compile(r"^sha256=([0-9a-fA-F]{64})$")


@dataclass(frozen=True)
class DataUri:
    url: str  # without the fragment
    sha256: str | None  # lower-case hex, None when not pinned

    @property
    def name(self) -> str:
        """The file name the URI ends in (what it is staged as, when it is not an archive)."""
        return Path(unquote(urlsplit(self.url).path)).name or "download"


def parse_data_uri(text: str) -> DataUri:
    """A checked DataUri; ValueError saying what is wrong (the callers add where it came from)."""
    parts = urlsplit(text.strip())
    scheme = parts.scheme.lower()
    if not scheme or len(scheme) == 1:  # "C:\..." parses as scheme "c"
        raise ValueError(
            f"{text!r} is not a URI: give a scheme, e.g. file:///abs/path/data.tar.gz or https://host/data.tar.gz"
        )
    if scheme == "file" and (parts.netloc not in ("", "localhost") or not parts.path.startswith("/")):
        raise ValueError(f"{text!r}: a file URI needs an absolute path, file:///abs/path (three slashes)")
    if scheme in ("http", "https") and not parts.netloc:
        raise ValueError(f"{text!r}: no host")
    if scheme not in BUILTIN_SCHEMES:
        check_fsspec_scheme(scheme, text)
    sha = None
    if parts.fragment:
        if not (m := _SHA256.match(parts.fragment)):
            raise ValueError(f"{text!r}: the fragment must be #sha256=<64 hex digits>, not #{parts.fragment}")
        sha = m.group(1).lower()
    return DataUri(parts._replace(fragment="").geturl(), sha)


def check_fsspec_scheme(scheme: str, text: str) -> None:
    if importlib.util.find_spec("fsspec") is None:
        raise ValueError(
            f"{text!r}: {scheme}:// URIs are read through fsspec, which is not installed "
            "(pip install fsspec and its backend, e.g. s3fs); or use file:// or https://"
        )
    from fsspec.registry import known_implementations, registry

    if scheme not in registry and scheme not in known_implementations:
        raise ValueError(f"{text!r}: unknown scheme {scheme}:// (fsspec knows no such filesystem)")


def fetch(uri: DataUri, dest: Path, timeout: float = 60) -> None:
    """Copy the URI's content to `dest` (the caller checks it against `uri.sha256`)."""
    import urllib.error  # here: every run imports this module (the dataset registry), few fetch (ssl, http: 5 ms)
    import urllib.request

    scheme = urlsplit(uri.url).scheme.lower()
    try:
        if scheme in BUILTIN_SCHEMES:  # urllib opens file:// too
            source = urllib.request.urlopen(uri.url, timeout=timeout)
        else:
            import fsspec

            source = fsspec.open(uri.url, "rb").open()
        with source, open(dest, "wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
    except ImportError as err:  # an fsspec backend (s3fs, gcsfs) missing on this node
        raise UserError(f"cannot read {uri.url}: {err}; install it on every node") from None
    except (urllib.error.URLError, OSError, TimeoutError, ValueError) as err:
        raise UserError(f"cannot fetch {uri.url}: {type(err).__name__}: {err}") from None
