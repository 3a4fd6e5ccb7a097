"""Many finished jobs' new MLflow runs written at once into an SQL store: one transaction for the batch.

MlflowClient writes a run call by call, and MLflow's SQL store opens a session and reloads the run for
each call (a `log_batch` costs ~40 ms of CPU whatever it writes), so a suite of many small jobs (FedAc's
585) spent more on its mirror than on its training. Here the rows MLflow's own calls would write (run,
tags, params, metrics, latest metrics, dataset input) go in through MLflow's table models in one
transaction per batch, after the files are copied into each run's artifact folder: a kill before the
commit leaves no run (the next `run` or `sync` mirrors the job: results/ stays the source of truth), a
kill after it leaves complete runs. Only store schemas this code was checked against (`TESTED_SCHEMAS`,
the store's alembic revision; tests/trust/test_tracking_batch.py compares each row with what
MlflowClient writes) take this path; any other store is written call by call (JobMirror.mirror).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path

# alembic revisions of MLflow's SQL schema whose tables this writer fills as MLflow's calls do
TESTED_SCHEMAS = frozenset({"dc11669786a5"})  # MLflow 3.17


@dataclass
class NewRun:
    """What a finished job's run holds (JobMirror.new_run)."""

    job_id: str
    name: str
    tags: dict[str, str]
    params: dict[str, str]
    metrics: list  # mlflow.entities.Metric
    dataset: object | None  # mlflow.entities.Dataset
    artifacts: list[tuple[Path, str | None]]  # (file, artifact folder)
    status: str  # the run's end status


class SqlBatchWriter:
    """Writes new runs of one experiment straight into MLflow's SQL store (`of` says whether it can)."""

    def __init__(self, store, experiment_id: str):
        self.store, self.experiment_id = store, experiment_id
        self.artifact_root = store.get_experiment(experiment_id).artifact_location

    @classmethod
    def of(cls, client, experiment_id: str) -> SqlBatchWriter | None:
        """A writer for the client's store, or None: not an SQL store, or a schema not in TESTED_SCHEMAS."""
        import sqlalchemy
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        store = client._tracking_client.store
        if not isinstance(store, SqlAlchemyStore):
            return None
        with store.engine.connect() as connection:
            revision = connection.execute(sqlalchemy.text("SELECT version_num FROM alembic_version")).scalar()
        return cls(store, experiment_id) if revision in TESTED_SCHEMAS else None

    def runs_of(self, job_ids: list[str]) -> dict:
        """The active run of each of `job_ids` that has one (the oldest), with only what
        JobMirror.is_complete reads: its status, `fedbench.status` tag and `client_acc.*` metrics. A few
        queries, where MLflow's search_runs loads every param and tag of every run of the experiment."""
        from mlflow.entities import Metric, Run, RunData, RunInfo, RunTag
        from mlflow.store.tracking.dbmodels.models import SqlLatestMetric, SqlRun, SqlTag

        found: dict[str, Run] = {}
        with self.store.ManagedSessionMaker() as session:
            for i in range(0, len(job_ids), 500):  # bound the statements' parameters
                rows = (
                    session.query(SqlTag.value, SqlRun.run_uuid, SqlRun.status)
                    .join(SqlRun, SqlRun.run_uuid == SqlTag.run_uuid)
                    .filter(SqlRun.experiment_id == int(self.experiment_id), SqlRun.lifecycle_stage == "active")
                    .filter(SqlTag.key == "fedbench.job_id", SqlTag.value.in_(job_ids[i : i + 500]))
                    .order_by(SqlRun.start_time.desc())  # the oldest last, so it stays
                )
                runs = {run_id: (job_id, status) for job_id, run_id, status in rows}
                status_tags = session.query(SqlTag.run_uuid, SqlTag.value).filter(
                    SqlTag.run_uuid.in_(runs), SqlTag.key == "fedbench.status"
                )
                tags = {run_id: [RunTag("fedbench.status", value)] for run_id, value in status_tags}
                metrics: dict[str, list] = {}
                for run_id, key, value in session.query(
                    SqlLatestMetric.run_uuid, SqlLatestMetric.key, SqlLatestMetric.value
                ).filter(SqlLatestMetric.run_uuid.in_(runs), SqlLatestMetric.key.like("client_acc.%")):
                    metrics.setdefault(run_id, []).append(Metric(key, value, 0, 0))
                for run_id, (job_id, status) in runs.items():
                    info = RunInfo(run_id, self.experiment_id, "", status, 0, None, "active")
                    found[job_id] = Run(info, RunData(metrics.get(run_id, []), [], tags.get(run_id, [])))
        return found

    def write(self, runs: list[NewRun]) -> None:
        """The runs' files, then all their rows in one transaction."""
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository
        from mlflow.utils.uri import append_to_uri_path

        rows: dict[str, list[dict]] = {t: [] for t in ("runs", "tags", "params", "metrics", "latest_metrics")}
        inputs: list[tuple[str, object]] = []
        for run in runs:
            run_id = uuid.uuid4().hex
            artifact_uri = append_to_uri_path(self.artifact_root, run_id, "artifacts")
            repository = get_artifact_repository(artifact_uri)
            for f, folder in run.artifacts:
                repository.log_artifact(str(f), folder)
            self._rows(run, run_id, artifact_uri, rows)
            if run.dataset is not None:
                inputs.append((run_id, run.dataset))
        from mlflow.store.tracking.dbmodels.models import SqlLatestMetric, SqlMetric, SqlParam, SqlRun, SqlTag

        tables = {"runs": SqlRun, "tags": SqlTag, "params": SqlParam, "metrics": SqlMetric}
        with self.store.ManagedSessionMaker(read_only=False) as session:
            for name, model in {**tables, "latest_metrics": SqlLatestMetric}.items():
                if rows[name]:
                    session.execute(model.__table__.insert(), rows[name])
            self._inputs(session, inputs)

    def _rows(self, run: NewRun, run_id: str, artifact_uri: str, rows: dict[str, list[dict]]) -> None:
        now = int(time.time() * 1000)
        tags = {"mlflow.runName": run.name, **run.tags}
        rows["runs"].append(
            {
                "run_uuid": run_id,
                "name": run.name,
                "source_type": "UNKNOWN",
                "source_name": "",
                "entry_point_name": "",
                "user_id": tags.get("mlflow.user", "unknown"),
                "status": run.status,
                "start_time": now,
                "end_time": now,
                "deleted_time": None,
                "source_version": "",
                "lifecycle_stage": "active",
                "artifact_uri": artifact_uri,
                "experiment_id": int(self.experiment_id),
            }
        )
        rows["tags"] += [{"key": k, "value": v, "run_uuid": run_id} for k, v in tags.items()]
        rows["params"] += [{"key": k, "value": v, "run_uuid": run_id} for k, v in run.params.items()]
        latest: dict[str, dict] = {}
        for m in run.metrics:
            is_nan, value = self.store.sanitize_metric_value(m.value)
            row = {"key": m.key, "value": value, "timestamp": m.timestamp, "step": m.step, "is_nan": is_nan}
            rows["metrics"].append({**row, "run_uuid": run_id})
            old = latest.get(m.key)  # MLflow's rule: the latest is the largest (step, timestamp, value)
            if old is None or (m.step, m.timestamp, value) > (old["step"], old["timestamp"], old["value"]):
                latest[m.key] = row
        rows["latest_metrics"] += [{**row, "run_uuid": run_id} for row in latest.values()]

    def _inputs(self, session, inputs: list[tuple[str, object]]) -> None:
        """Each run's dataset as MLflow's log_inputs records it: one dataset row per (name, digest) in
        the experiment, one input edge per run."""
        from mlflow.store.tracking.dbmodels.models import SqlDataset, SqlInput

        known: dict[tuple[str, str], str] = {}
        for run_id, dataset in inputs:
            key = (dataset.name, dataset.digest)
            if key not in known:
                found = (
                    session.query(SqlDataset.dataset_uuid)
                    .filter(SqlDataset.experiment_id == int(self.experiment_id))
                    .filter(SqlDataset.name == dataset.name, SqlDataset.digest == dataset.digest)
                    .first()
                )
                known[key] = found[0] if found else uuid.uuid4().hex
                if not found:
                    session.add(
                        SqlDataset(
                            dataset_uuid=known[key],
                            experiment_id=int(self.experiment_id),
                            name=dataset.name,
                            digest=dataset.digest,
                            dataset_source_type=dataset.source_type,
                            dataset_source=dataset.source,
                            dataset_schema=dataset.schema,
                            dataset_profile=dataset.profile,
                        )
                    )
            session.add(
                SqlInput(
                    input_uuid=uuid.uuid4().hex,
                    source_type="DATASET",
                    source_id=known[key],
                    destination_type="RUN",
                    destination_id=run_id,
                )
            )
