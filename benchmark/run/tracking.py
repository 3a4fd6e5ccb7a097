"""MLflow mirror of the results: one parent run per suite invocation, one child run per job.

Several jobs can be open at once (the Ray executor's driver logs jobs running in parallel):
`log_records` and `end_job` name their job; without `job_id`, the job started last.

Default store: a local SQLite file (`sqlite:///mlflow.db` in the working directory, which is
what `mlflow ui` opens); `--tracking-uri` or $MLFLOW_TRACKING_URI override it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

DEFAULT_URI = "sqlite:///mlflow.db"
METRIC_KEYS = ("test_acc", "test_loss", "train_loss", "ema_acc", "bytes_down", "bytes_up", "subopt")


def flatten(obj, prefix: str = "") -> dict[str, str]:
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}{k}."))
    elif isinstance(obj, list) and obj and all(isinstance(v, dict) for v in obj):
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{prefix}{i}."))
    else:
        out[prefix.rstrip(".")] = str(obj)[:6000]
    return out


class NullTracker:
    def start_job(self, job, config: dict) -> None: ...
    def log_records(self, records: list[dict], job_id: str | None = None) -> None: ...
    def end_job(self, summary: dict, files: list[Path]) -> None: ...
    def close(self, status: str = "FINISHED") -> None: ...


class MlflowTracker(NullTracker):
    BATCH = 200  # metric values per log_batch call (MLflow accepts up to 1000)

    def __init__(self, suite_name: str, uri: str | None = None, run_name: str | None = None):
        import mlflow
        from mlflow.tracking import MlflowClient

        self.uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI
        mlflow.set_tracking_uri(self.uri)
        self.client = MlflowClient(self.uri)
        exp = self.client.get_experiment_by_name(suite_name)
        self.experiment_id = exp.experiment_id if exp else self.client.create_experiment(suite_name)
        self.parent = self.client.create_run(
            self.experiment_id, run_name=run_name or f"{suite_name}-{time.strftime('%Y%m%d-%H%M%S')}",
            tags={"fedbench.kind": "suite"},
        ).info.run_id
        self.children: dict[str, str] = {}  # job id -> child run id, while the job runs
        self.last_started: str | None = None

    def start_job(self, job, config: dict) -> None:
        from mlflow.entities import Param

        child = self.client.create_run(
            self.experiment_id, run_name=f"{job.dataset_label}/{job.method_label}/s{job.config.seed}",
            tags={"mlflow.parentRunId": self.parent, "fedbench.job_id": job.id, "fedbench.kind": "job"},
        ).info.run_id
        self.children[job.id], self.last_started = child, job.id
        params = [Param(k[:250], v) for k, v in flatten(config).items()]
        for i in range(0, len(params), 100):
            self.client.log_batch(child, params=params[i : i + 100])

    def log_records(self, records: list[dict], job_id: str | None = None) -> None:
        from mlflow.entities import Metric

        child = self.children[job_id or self.last_started]
        now = int(time.time() * 1000)
        metrics = [Metric(k, float(r[k]), now, int(r["round"])) for r in records for k in METRIC_KEYS if r.get(k) is not None]
        for i in range(0, len(metrics), self.BATCH):
            self.client.log_batch(child, metrics=metrics[i : i + self.BATCH])

    def end_job(self, summary: dict, files: list[Path]) -> None:
        from mlflow.entities import Metric

        child = self.children.pop(summary["job_id"], None)
        if child is None:  # the job failed before its run could be created
            return
        now = int(time.time() * 1000)
        final = [Metric(f"summary.{k.replace('@', '_at_')}", float(v), now, 0)
                 for k, v in summary.get("metrics", {}).items() if isinstance(v, (int, float))]
        if final:
            self.client.log_batch(child, metrics=final)
        for f in files:
            if f.exists():
                self.client.log_artifact(child, str(f))
        self.client.set_terminated(child, "FINISHED" if summary.get("status") == "finished" else "FAILED")

    def close(self, status: str = "FINISHED") -> None:
        for child in self.children.values():
            self.client.set_terminated(child, "KILLED")
        self.client.set_terminated(self.parent, status)
