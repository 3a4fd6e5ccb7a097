"""Shared fixtures."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest
import torch

# Test tensors are tiny: a thread pool only adds contention (and noise) to them.
torch.set_num_threads(1)


@pytest.fixture(autouse=True, scope="session")
def isolated_cache(tmp_path_factory):
    """Decoded-dataset caches go to a temporary folder, not the user's ~/.cache/fedbench."""
    previous = os.environ.get("FEDBENCH_CACHE")
    os.environ["FEDBENCH_CACHE"] = str(tmp_path_factory.mktemp("fedbench-cache"))
    yield
    if previous is None:
        os.environ.pop("FEDBENCH_CACHE", None)
    else:
        os.environ["FEDBENCH_CACHE"] = previous


def _shared(variable: str, needs: str) -> Path:
    """Shared material outside the repository, named by an environment variable; the test skips without it."""
    root = os.environ.get(variable)
    if not root:
        pytest.skip(f"{variable} is not set: {needs} (bash .ci/run sets it)")
    return Path(root)


@pytest.fixture
def data_root() -> Path:
    return _shared("FEDBENCH_DATA", "real-data tests need the shared datasets")


@pytest.fixture
def papers_root() -> Path:
    """The papers' plain text the suites quote (paper_quotes.PAPER_FILES)."""
    return _shared("FEDBENCH_PAPERS", "the quote checks need the papers' text")


@pytest.fixture(scope="session")
def migrated_mlflow_db(tmp_path_factory) -> Path:
    """An empty MLflow SQLite store, made once per session: making one runs MLflow's database
    migrations (~10 s on a busy machine), copying it takes milliseconds."""
    from mlflow.tracking import MlflowClient

    path = tmp_path_factory.mktemp("mlflow-template") / "store.db"
    MlflowClient(f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def mlflow_store(tmp_path, migrated_mlflow_db):
    """new_store(name) -> the URI of a fresh, empty MLflow store in this test's folder."""

    def new_store(name: str = "store.db") -> str:
        shutil.copyfile(migrated_mlflow_db, tmp_path / name)
        return f"sqlite:///{tmp_path / name}"

    return new_store


@pytest.fixture
def ctrl_c_raises():
    """SIGINT at Python's default (KeyboardInterrupt) for the test, whatever the runner inherited: a
    job started in the background of a non-interactive shell (CI, nohup) ignores SIGINT."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
