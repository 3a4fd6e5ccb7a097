"""A new SQLite store made from the migrated template is the store MLflow would make: same schema, same
revision, the same Default experiment (its artifact folder where MLflow would put it), and MLflow opens it
without migrating; a broken template is made again."""

from __future__ import annotations

import sqlite3

import pytest

from benchmark.run.mlflow_new_store import create_sqlite_store, migrated_template

mlflow = pytest.importorskip("mlflow")


def clauses(sql: str | None) -> frozenset:
    """A statement as the set of its lines: MLflow's migrations write a table's constraints in string-hash
    order (`runs` differs between two stores MLflow makes under two PYTHONHASHSEEDs), an order SQLite
    ignores."""
    return frozenset(line.strip().rstrip(",") for line in (sql or "").splitlines())


def contents(path) -> dict:
    with sqlite3.connect(path) as db:
        schema = {
            (kind, name, clauses(sql)) for kind, name, sql in db.execute("SELECT type, name, sql FROM sqlite_master")
        }
        experiments = db.execute("SELECT experiment_id, name, artifact_location, lifecycle_stage FROM experiments")
        out = {"schema": schema, "experiments": experiments.fetchall()}
        out["revision"] = db.execute("SELECT version_num FROM alembic_version").fetchall()
    db.close()
    return out


def test_a_store_made_from_the_template_is_the_store_mlflow_makes(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDBENCH_CACHE", str(tmp_path / "cache"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # MLflow's Default experiment keeps its artifacts under the working directory
    mlflow.tracking.MlflowClient(f"sqlite:///{work / 'by_mlflow.db'}").search_experiments()
    create_sqlite_store(f"sqlite:///{work / 'copied.db'}")
    assert contents(work / "copied.db") == contents(work / "by_mlflow.db")
    client = mlflow.tracking.MlflowClient(f"sqlite:///{work / 'copied.db'}")
    experiment = client.create_experiment("x")  # MLflow uses it as its own
    assert client.get_experiment(experiment).artifact_location == str(work / "mlruns" / experiment)
    assert (work / "copied.db").stat().st_mode & 0o777 == (work / "by_mlflow.db").stat().st_mode & 0o777


def test_an_existing_store_is_left_alone_and_a_broken_template_is_made_again(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDBENCH_CACHE", str(tmp_path / "cache"))
    template = migrated_template()
    template.write_bytes(b"not a database")  # a disk that filled up, an edit
    mine = tmp_path / "mine.db"
    mine.write_bytes(b"whatever the user keeps here")
    create_sqlite_store(f"sqlite:///{mine}")
    assert mine.read_bytes() == b"whatever the user keeps here"
    create_sqlite_store(f"sqlite:///{tmp_path / 'new.db'}")
    assert contents(tmp_path / "new.db")["revision"] == contents(migrated_template())["revision"] != []
