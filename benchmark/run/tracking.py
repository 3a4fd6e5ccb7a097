"""MLflow mirror of the results: one parent run per suite invocation, one child run per job.

Default store: a local SQLite file (`sqlite:///mlflow.db` in the working directory, which is
what `mlflow ui` opens); `--tracking-uri` or $MLFLOW_TRACKING_URI override it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

DEFAULT_URI = "sqlite:///mlflow.db"
METRIC_KEYS = ("test_acc", "test_loss", "train_loss", "ema_acc", "bytes_down", "bytes_up", "subopt")
# summary.json fields logged as run metrics (a failed or diverged job has no final_acc: nothing is logged)
SUMMARY_METRICS = ("final_acc", "final_ema_acc", "final_subopt", "wall_time_s", "rounds_completed")


def _item_key(item: dict, index: int, siblings: list) -> str:
    """A list item's key: its component name (client terms by term name), else its position."""
    name = item.get("term") or item.get("rule") or item.get("codec")
    unique = name and sum(1 for s in siblings if name in (s.get("term"), s.get("rule"), s.get("codec"))) == 1
    return str(name) if unique else str(index)


def flatten(obj, prefix: str = "") -> dict[str, str]:
    """Dotted params; None values are left out (MLflow would store the string 'None')."""
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}{k}."))
    elif isinstance(obj, list) and obj and all(isinstance(v, dict) for v in obj):
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{prefix}{_item_key(v, i, obj)}."))
    elif obj is not None:
        out[prefix.rstrip(".")] = str(obj)[:6000]
    return out


def provenance_tags() -> dict[str, str]:
    """Code and environment of this process: git commit (MLflow's own tag), package versions."""
    import platform
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    tags = {"fedbench.python": platform.python_version()}
    for package in ("fedbench", "torch", "mlflow", "numpy"):
        try:
            tags[f"fedbench.version.{package}"] = version(package)
        except PackageNotFoundError:
            pass
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return tags
    if commit.returncode == 0:
        tags["mlflow.source.git.commit"] = commit.stdout.strip()
        tags["fedbench.git_dirty"] = str(bool(dirty.stdout.strip())).lower()
    return tags


def job_tags(job, suite: str) -> dict[str, str]:
    c = job.config
    return {"fedbench.suite": suite, "fedbench.dataset": job.dataset_label, "fedbench.method": job.method_label,
            "fedbench.setting": job.setting_label, "fedbench.seed": str(c.seed), "fedbench.job_id": job.id,
            "fedbench.model": c.model.name, "fedbench.split": c.dataset.split.kind}


def job_run_name(job) -> str:
    """Readable and unique within a suite (the job id's head disambiguates equal settings)."""
    return f"{job.dataset_label} | {job.setting_label} | seed {job.config.seed} | {job.id[:6]}"


class NullTracker:
    def start_job(self, job, config: dict) -> None: ...
    def log_records(self, records: list[dict]) -> None: ...
    def end_job(self, summary: dict, files: list[Path]) -> None: ...
    def attach(self, files: list[Path], artifact_path: str | None = None) -> None:
        """Files for the suite's parent run (the suite file, the report's tables and figures)."""
    def close(self, status: str = "FINISHED") -> None: ...


class MlflowTracker(NullTracker):
    BATCH = 200  # metric values per log_batch call (MLflow accepts up to 1000)

    def __init__(self, suite_name: str, uri: str | None = None, run_name: str | None = None,
                 suite_file: Path | None = None, overrides: list[str] = ()):
        import mlflow
        from mlflow.tracking import MlflowClient

        self.uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI
        mlflow.set_tracking_uri(self.uri)
        self.client = MlflowClient(self.uri)
        exp = self.client.get_experiment_by_name(suite_name)
        self.experiment_id = exp.experiment_id if exp else self.client.create_experiment(suite_name)
        self.provenance = provenance_tags()
        self.parent = self.client.create_run(
            self.experiment_id, run_name=run_name or f"{suite_name}-{time.strftime('%Y%m%d-%H%M%S')}",
            tags={"fedbench.kind": "suite", "fedbench.suite": suite_name, **self.provenance,
                  **({"fedbench.overrides": " ".join(overrides)} if overrides else {})},
        ).info.run_id
        self.suite = suite_name
        self.child: str | None = None
        if suite_file is not None:
            self.attach([Path(suite_file)], "suite")

    def start_job(self, job, config: dict) -> None:
        from mlflow.entities import Param

        self.child = self.client.create_run(
            self.experiment_id, run_name=job_run_name(job),
            tags={"mlflow.parentRunId": self.parent, "fedbench.kind": "job", **job_tags(job, self.suite),
                  **self.provenance},
        ).info.run_id
        params = [Param(k[:250], v) for k, v in flatten(config).items()]
        for i in range(0, len(params), 100):
            self.client.log_batch(self.child, params=params[i : i + 100])

    def log_records(self, records: list[dict]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(k, float(r[k]), now, int(r["round"])) for r in records for k in METRIC_KEYS if r.get(k) is not None]
        for i in range(0, len(metrics), self.BATCH):
            self.client.log_batch(self.child, metrics=metrics[i : i + self.BATCH])

    def end_job(self, summary: dict, files: list[Path]) -> None:
        from mlflow.entities import Metric

        if self.child is None:  # the job failed before its run could be created
            return
        now = int(time.time() * 1000)
        values = {**{f"summary.{k.replace('@', '_at_')}": v for k, v in summary.get("metrics", {}).items()},
                  **{k: summary.get(k) for k in SUMMARY_METRICS}}
        final = [Metric(k, float(v), now, 0) for k, v in values.items() if isinstance(v, (int, float))]
        if final:
            self.client.log_batch(self.child, metrics=final)
        for f in files:
            if f.exists():
                self.client.log_artifact(self.child, str(f))
        self.client.set_terminated(self.child, "FINISHED" if summary.get("status") == "finished" else "FAILED")
        self.child = None

    def attach(self, files: list[Path], artifact_path: str | None = None) -> None:
        for f in files:
            self.client.log_artifact(self.parent, str(f), artifact_path)

    def close(self, status: str = "FINISHED") -> None:
        if self.child:
            self.client.set_terminated(self.child, "KILLED")
        self.client.set_terminated(self.parent, status)


def attach_to_suite_run(suite_name: str, files: list[Path], uri: str | None = None, artifact_path: str = "report") -> bool:
    """Attach files (a report's tables and figures) to the suite's latest parent run; False when
    the store has no run of this suite (nothing to attach to: the files stay where they are)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI)
    exp = client.get_experiment_by_name(suite_name)
    runs = client.search_runs([exp.experiment_id], "tags.`fedbench.kind` = 'suite'", order_by=["attributes.start_time DESC"],
                              max_results=1) if exp else []
    if not runs:
        return False
    for f in files:
        client.log_artifact(runs[0].info.run_id, str(f), artifact_path)
    return True
