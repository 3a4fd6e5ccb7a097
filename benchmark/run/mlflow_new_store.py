"""A new SQLite MLflow store made as a copy of an empty one that MLflow itself migrated, once per machine
and MLflow version (in the fedbench cache), instead of running MLflow's ~100 schema migrations again for
every new store (10-13 s of a short tracked run on a busy machine; tests copy such a store the same way).
The copy differs from a store MLflow makes in one value, the Default experiment's artifact folder (made
where the template was), which is set to the one MLflow would give it here.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def sqlite_file(uri: str) -> Path | None:
    """The SQLite store's database file, absolute (a relative one is relative to the working folder, as
    MLflow reads it); None for any other store."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(os.path.abspath(uri.removeprefix("sqlite:///")))


def create_sqlite_store(uri: str) -> None:
    """Where `uri` names a SQLite file that does not exist yet, make it from the template. Call under the
    store's lock (tracking.store_lock). A failure raises and leaves no file: MLflow then makes the store."""
    import sqlite3  # here: every run imports this module (the executors' registry), only a new store needs it

    path = sqlite_file(uri)
    if path is None or path.exists() or not path.parent.is_dir():
        return
    template = migrated_template()
    made = Path(tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".new")[1])
    try:
        shutil.copyfile(template, made)
        with sqlite3.connect(made) as db:
            db.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0", (default_location(),))
        db.close()
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(made, 0o666 & ~umask)  # as a file MLflow creates (mkstemp's is private)
        os.replace(made, path)
    finally:
        made.unlink(missing_ok=True)


def default_location() -> str:
    """The Default experiment's artifact folder in a store MLflow makes in this working directory."""
    from mlflow.store.tracking import DEFAULT_LOCAL_FILE_AND_ARTIFACT_PATH
    from mlflow.utils.uri import append_to_uri_path, resolve_uri_if_local

    return append_to_uri_path(resolve_uri_if_local(DEFAULT_LOCAL_FILE_AND_ARTIFACT_PATH), "0")


def migrated_template() -> Path:
    """The empty store of this MLflow version in the fedbench cache, made (by MLflow) if it is missing or
    unreadable."""
    import sqlite3

    import mlflow
    from mlflow.tracking import MlflowClient

    from benchmark.data.cache import cache_dir

    template = cache_dir() / "mlflow" / f"empty-store-{mlflow.__version__}.db"
    if revision(template):
        return template
    template.parent.mkdir(parents=True, exist_ok=True)
    made = Path(tempfile.mkstemp(dir=template.parent, suffix=".new")[1])
    try:
        made.unlink()  # MLflow makes the file
        MlflowClient(f"sqlite:///{made}")._tracking_client.store  # noqa: B018 (opening a store migrates it)
        if not revision(made):
            raise sqlite3.DatabaseError(f"MLflow made no schema in {made}")
        os.replace(made, template)
    finally:
        made.unlink(missing_ok=True)
    return template


def revision(store: Path) -> str | None:
    """The store's schema revision (alembic's), or None: no such file, or not a migrated store."""
    import sqlite3

    if not store.is_file():
        return None
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            row = db.execute("SELECT version_num FROM alembic_version").fetchone()
        db.close()
    except sqlite3.Error:
        return None
    return row[0] if row else None
