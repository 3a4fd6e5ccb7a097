"""Downloads resume an interrupted transfer, check what arrived and record its sha256."""

from __future__ import annotations

import hashlib
import io

import pytest

from benchmark.data.download import download
from benchmark.errors import UserError

PAYLOAD = bytes(range(256)) * 40  # 10,240 bytes


class Served(io.BytesIO):
    """An HTTP response for `Range: bytes=N-` (206 from N) or the whole payload (200)."""

    def __init__(self, request, fail_after: int | None):
        start = int(request.headers.get("Range", "bytes=0-")[6:-1] or 0)
        super().__init__(PAYLOAD[start:])
        self.status = 206 if start else 200
        self.headers = {"Content-Length": str(len(PAYLOAD) - start)}
        self.fail_after = fail_after

    def read(self, n=-1):
        if self.fail_after is not None and self.tell() >= self.fail_after:
            raise OSError("connection reset")
        return super().read(min(n, 1000))


def test_an_interrupted_download_resumes_where_it_stopped(tmp_path, monkeypatch):
    requests = []

    def urlopen(request, timeout):
        requests.append(request.headers.get("Range"))
        return Served(request, fail_after=3000 if len(requests) == 1 else None)

    monkeypatch.setattr("urllib.request.urlopen", urlopen)
    dest = tmp_path / "file.bin"
    with pytest.raises(UserError, match="kept and the next try resumes"):
        download("https://host/file.bin", dest)
    assert (tmp_path / "file.bin.partial").stat().st_size == 3000
    sha = hashlib.sha256(PAYLOAD).hexdigest()
    download("https://host/file.bin", dest, sha256=sha)
    assert requests == [None, "bytes=3000-"] and dest.read_bytes() == PAYLOAD
    assert (tmp_path / "file.bin.sha256").read_text().split()[0] == sha


def test_a_wrong_sha256_is_refused_and_deleted(tmp_path, monkeypatch):
    monkeypatch.setattr("urllib.request.urlopen", lambda request, timeout: Served(request, None))
    with pytest.raises(UserError, match="not the expected"):
        download("https://host/file.bin", tmp_path / "file.bin", sha256="0" * 64)
    assert not list(tmp_path.iterdir())
