"""Downloading dataset files from their official URLs (urllib only), into the data root; each
dataset's spec names its URLs (`DatasetSpec.downloads`)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from benchmark.data.cache import sha256_file
from benchmark.errors import UserError

CHUNK = 1 << 20


def download(url: str, dest: Path, timeout: float = 30, sha256: str | None = None) -> Path:
    """Fetch `url` to `dest` via `dest.partial`, resuming a partial file left by an interrupted
    download (HTTP Range) and showing progress; then check it (the expected sha256 when given, a
    zip's own CRCs) and write its sha256 to `dest.sha256`."""
    import urllib.error  # here: every run imports this module (the dataset registry), few download (ssl, http: 5 ms)
    import urllib.request

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    have = tmp.stat().st_size if tmp.is_file() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            resumed = have and getattr(response, "status", 200) == 206  # 200: the server ignored the range
            length = getattr(response, "headers", {}).get("Content-Length") or 0
            total = int(length) + (have if resumed else 0)
            with open(tmp, "ab" if resumed else "wb") as out:
                copy_with_progress(response, out, dest.name, have if resumed else 0, total)
    except (urllib.error.URLError, OSError, TimeoutError) as err:
        kept = f"; {tmp} is kept and the next try resumes it" if tmp.is_file() and tmp.stat().st_size else ""
        raise UserError(
            f"could not download {url} ({err}){kept}. Download it on a machine that is online and put it at {dest}"
        ) from None
    check(tmp, url, sha256)
    tmp.replace(dest)
    return dest


def copy_with_progress(response, out, name: str, done: int, total: int) -> None:
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task(f"downloading {name}", total=total or None, completed=done)
        while block := response.read(CHUNK):
            out.write(block)
            bar.advance(task, len(block))


def check(path: Path, url: str, sha256: str | None) -> None:
    """Refuse a download whose sha256 differs from `sha256`, or a zip whose members fail their CRC."""
    digest = sha256_file(path)
    if sha256 and digest != sha256:
        path.unlink()
        raise UserError(f"{url}: sha256 {digest} is not the expected {sha256}; the download was deleted, try again")
    if path.name.endswith(".zip.partial"):
        try:
            with zipfile.ZipFile(path) as zf:
                bad = zf.testzip()
        except zipfile.BadZipFile as err:
            bad = str(err)
        if bad:
            path.unlink()
            raise UserError(f"{url}: the downloaded zip is damaged ({bad}); it was deleted, try again")
    path.with_name(path.name.removesuffix(".partial") + ".sha256").write_text(
        f"{digest}  {path.name.removesuffix('.partial')}\n"
    )
