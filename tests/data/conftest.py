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
def real_root() -> Path:
    """The shipped real data ($FEDBENCH_DATA); skips with a reason when it is not set."""
    env = os.environ.get("FEDBENCH_DATA")
    if not env:
        pytest.skip("FEDBENCH_DATA is unset: point it at the shared real data to run real-data tests")
    return Path(env)
