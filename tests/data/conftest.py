import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch) -> Path:
    """Every test gets its own fedbench cache, so archives and tensors never leak between tests."""
    cache = tmp_path / "fedbench-cache"
    monkeypatch.setenv("FEDBENCH_CACHE", str(cache))
    return cache


@pytest.fixture
def real_cache(monkeypatch) -> Path:
    """Real-data tests use the user's fedbench cache (as real runs do), so decoded tensors are
    reused across test runs instead of rebuilt from the archives every time."""
    original = os.environ.get("FEDBENCH_CACHE_ORIGINAL")
    path = Path(original).expanduser() if original else Path.home() / ".cache" / "fedbench"
    monkeypatch.setenv("FEDBENCH_CACHE", str(path))
    return path


def pytest_configure(config) -> None:
    # remember the caller's cache before the autouse fixture isolates each test
    os.environ.setdefault("FEDBENCH_CACHE_ORIGINAL", os.environ.get("FEDBENCH_CACHE", ""))
