"""MLflow mirror of the results: one parent run per suite, one child run per job.

Results on disk are the source of truth; MLflow mirrors them and may fail without failing a
job: every tracking call that raises is reported as a warning and the job goes on.

- The parent run of a suite is found by its tag (`fedbench.kind = suite`) and reused by every
  invocation; a job's child run is found by `fedbench.job_id`, so a resumed or rerun job
  continues its own run and only the rounds it lacks are logged.
- Processes share a store safely: creating a SQLite store (MLflow's migrations) and looking up
  or creating the experiment and parent run happen under a lock file beside the database.
- Several jobs can be open at once (the Ray executor's driver logs jobs running in parallel):
  `log_records` names its job (by default the one started last), `end_job` ends the summary's.
- Runs left RUNNING by a killed process are closed (KILLED) when the next process starts: a
  child whose job lock is free has no process behind it. The parent is closed by the last
  process of the suite to finish (the one that can take the suite lock exclusively).

Default store: a local SQLite file (`sqlite:///mlflow.db` in the working directory, which is
what `mlflow ui` opens); `--tracking-uri` or $MLFLOW_TRACKING_URI override it.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from benchmark.run.job_status import FINISHED, STOPPED
from benchmark.run.locks import FileLock, job_lock, suite_lock
from benchmark.run.records import MEASURED

log = logging.getLogger(__name__)
DEFAULT_URI = "sqlite:///mlflow.db"
METRIC_KEYS = MEASURED
# summary.json fields logged as run metrics (a failed or diverged job has no final_acc: nothing is logged)
SUMMARY_METRICS = ("final_acc", "final_ema_acc", "final_subopt", "final_val_ema_acc", "wall_time_s", "rounds_completed")
# job status -> MLflow run status (the exact one is the run's `fedbench.status` tag)
RUN_STATUS = {FINISHED: "FINISHED", STOPPED: "KILLED"}


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
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return tags
    if commit.returncode == 0:
        tags["mlflow.source.git.commit"] = commit.stdout.strip()
        tags["fedbench.git_dirty"] = str(bool(dirty.stdout.strip())).lower()
    return tags


def job_tags(job, suite: str) -> dict[str, str]:
    c = job.config
    return {
        "fedbench.suite": suite,
        "fedbench.dataset": job.dataset_label,
        "fedbench.method": job.method_label,
        "fedbench.setting": job.setting_label,
        "fedbench.seed": str(c.seed),
        "fedbench.job_id": job.id,
        "fedbench.model": c.model.name,
        "fedbench.split": c.dataset.split.kind,
    }


def job_run_name(job) -> str:
    """Readable and unique within a suite (the job id's head disambiguates equal settings)."""
    return f"{job.dataset_label} | {job.setting_label} | seed {job.config.seed} | {job.id[:6]}"


class NullTracker:
    uri: str | None = None  # where runs go; None: nowhere

    def start_job(self, job, config: dict) -> None: ...
    def log_records(self, records: list[dict], job_id: str | None = None) -> None: ...
    def end_job(self, summary: dict, files: list[Path]) -> None: ...
    def attach(self, files: list[Path], artifact_path: str | None = None) -> None:
        """Files for the suite's parent run (the suite file, the report's tables and figures)."""

    def close(self, status: str = "FINISHED") -> None: ...


def tracking_may_fail(method):
    """A tracking call that raises warns (results on disk are unaffected) instead of failing the job."""

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as err:
            log.warning(
                "MLflow (%s) %s failed: %s: %s; the results on disk are complete, rerun the suite to mirror them again",
                self.uri,
                method.__name__,
                type(err).__name__,
                str(err).splitlines()[0] if str(err) else "",
            )
            if method.__name__ == "start_job":
                self.open.pop(args[0].id, None)  # nothing to log into for this job

    return guarded


def store_lock(uri: str) -> FileLock | None:
    """A lock beside a SQLite store's file: its creation (alembic migrations) is not concurrency-safe."""
    if not uri.startswith("sqlite:///"):
        return None
    return FileLock(Path(uri.removeprefix("sqlite:///") + ".lock"))


@dataclass
class ChildRun:
    run_id: str
    logged_upto: int = 0  # the last round it has: a resumed job logs only what follows


class MlflowTracker(NullTracker):
    BATCH = 200  # metric values per log_batch call (MLflow accepts up to 1000)

    def __init__(
        self, suite_name: str, uri: str | None = None, results_root: Path | None = None, suite_file: Path | None = None
    ):
        """Connect, find or create the suite's experiment and parent run; raises if the store
        cannot be reached at all (the CLI then says so and runs without tracking)."""
        import mlflow
        from mlflow.tracking import MlflowClient

        # a new store's "Creating initial MLflow database tables..." lines are MLflow's chatter, not the run's
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
        # an unreachable server: fail in seconds, not after MLflow's default minutes of retries
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
        self.uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI
        self.suite = suite_name
        self.results_root = Path(results_root) if results_root else None
        self.open: dict[str, ChildRun] = {}  # job id -> its run, while the job runs
        self.last_started: str | None = None
        lock = store_lock(self.uri)
        if lock:
            lock.acquire()
        try:
            mlflow.set_tracking_uri(self.uri)
            self.client = MlflowClient(self.uri)
            self.experiment_id = self._experiment(suite_name)
            self.parent = self._parent(suite_name)
            self.client.update_run(self.parent, status="RUNNING")
        finally:
            if lock:
                lock.release()
        self.running = suite_lock(self.results_root, suite_name) if self.results_root else None
        if self.running:
            self.running.acquire(shared=True)
            self.close_abandoned_runs()
        self.provenance = provenance_tags()
        self.describe_parent(suite_file)

    def _experiment(self, name: str) -> str:
        if exp := self.client.get_experiment_by_name(name):
            return exp.experiment_id
        try:
            return self.client.create_experiment(name)
        except Exception:  # created meanwhile by another process (a remote store has no lock file)
            if exp := self.client.get_experiment_by_name(name):
                return exp.experiment_id
            raise

    def _parent(self, suite_name: str) -> str:
        """The suite's one parent run. On a remote store two processes may both create one: the
        oldest wins and the other is deleted (a SQLite store is serialised by its lock file)."""
        query = "tags.`fedbench.kind` = 'suite'"
        if found := self._find_run(query):
            return found
        mine = self.client.create_run(
            self.experiment_id, run_name=suite_name, tags={"fedbench.kind": "suite"}
        ).info.run_id
        oldest = self._find_run(query)
        if oldest != mine:
            self.client.delete_run(mine)
        return oldest

    def _find_run(self, filter_string: str) -> str | None:
        """The oldest run of the experiment matching `filter_string` (there is one by construction)."""
        runs = self.client.search_runs(
            [self.experiment_id], filter_string, max_results=1, order_by=["attributes.start_time ASC"]
        )
        return runs[0].info.run_id if runs else None

    @tracking_may_fail
    def close_abandoned_runs(self) -> None:
        """Child runs RUNNING without a process behind them (killed by SIGKILL, a power cut)."""
        stale = self.client.search_runs(
            [self.experiment_id], "tags.`fedbench.kind` = 'job' and attributes.status = 'RUNNING'"
        )
        for run in stale:
            lock = job_lock(self.results_root, self.suite, run.data.tags.get("fedbench.job_id", "?"))
            if lock.acquire(blocking=False):  # held while closing, so its job cannot restart meanwhile
                try:
                    self.client.set_terminated(run.info.run_id, "KILLED")
                finally:
                    lock.release()

    @tracking_may_fail
    def start_job(self, job, config: dict) -> None:
        from mlflow.entities import Param

        self.last_started = job.id
        if found := self._find_run(f"tags.`fedbench.job_id` = '{job.id}'"):  # resumed or rerun: continue its run
            self.client.update_run(found, status="RUNNING")
            history = self.client.get_metric_history(found, "test_acc")
            self.open[job.id] = ChildRun(found, max((m.step for m in history), default=0))
            return
        child = self.client.create_run(
            self.experiment_id,
            run_name=job_run_name(job),
            tags={
                "mlflow.parentRunId": self.parent,
                "fedbench.kind": "job",
                **job_tags(job, self.suite),
                **self.provenance,
            },
        ).info.run_id
        self.open[job.id] = ChildRun(child)
        params = [Param(k[:250], v) for k, v in flatten(config).items()]
        for i in range(0, len(params), 100):
            self.client.log_batch(child, params=params[i : i + 100])

    @tracking_may_fail
    def log_records(self, records: list[dict], job_id: str | None = None) -> None:
        from mlflow.entities import Metric

        child = self.open.get(job_id or self.last_started)
        if child is None:
            return
        new = [r for r in records if r["round"] > child.logged_upto]
        now = time.time()
        metrics = [
            Metric(k, float(r[k]), int(1000 * r.get("time", now)), int(r["round"]))
            for r in new
            for k in METRIC_KEYS
            if r.get(k) is not None
        ]
        for i in range(0, len(metrics), self.BATCH):
            self.client.log_batch(child.run_id, metrics=metrics[i : i + self.BATCH])
        if new:
            child.logged_upto = new[-1]["round"]

    @tracking_may_fail
    def end_job(self, summary: dict, files: list[Path]) -> None:
        from mlflow.entities import Metric

        child = self.open.pop(summary["job_id"], None)
        if child is None:  # the job failed before its run could be created
            return
        now = int(time.time() * 1000)
        values = {
            **{f"summary.{k.replace('@', '_at_')}": v for k, v in summary.get("metrics", {}).items()},
            **{k: summary.get(k) for k in SUMMARY_METRICS},
        }
        final = [Metric(k, float(v), now, 0) for k, v in values.items() if isinstance(v, (int, float))]
        if summary.get("diverged_at_round"):
            final.append(Metric("diverged_at_round", float(summary["diverged_at_round"]), now, 0))
        if final:
            self.client.log_batch(child.run_id, metrics=final)
        self.client.set_tag(child.run_id, "fedbench.status", summary.get("status", "?"))
        for f in files:
            if f.exists():
                self.client.log_artifact(child.run_id, str(f))
        self.client.set_terminated(child.run_id, RUN_STATUS.get(summary.get("status"), "FAILED"))

    @tracking_may_fail
    def attach(self, files: list[Path], artifact_path: str | None = None) -> None:
        for f in files:
            self.client.log_artifact(self.parent, str(f), artifact_path)

    @tracking_may_fail
    def describe_parent(self, suite_file: Path | None) -> None:
        """The code this invocation runs (the suite's parent run outlives invocations: latest wins)
        and the suite file it read."""
        for key, value in {"fedbench.suite": self.suite, **self.provenance}.items():
            self.client.set_tag(self.parent, key, value)
        if suite_file is not None:
            self.attach([Path(suite_file)], "suite")

    @tracking_may_fail
    def close(self, status: str = "FINISHED") -> None:
        """End this process's part: a child still open was interrupted; the parent is closed by
        the last process running the suite."""
        while self.open:
            self.client.set_terminated(self.open.popitem()[1].run_id, "KILLED")
        if self.running is None:
            self.client.set_terminated(self.parent, status)
            return
        self.running.release()
        if self.running.acquire(blocking=False):  # no other process is running this suite
            try:
                self.client.set_terminated(self.parent, status)
            finally:
                self.running.release()


def attach_to_suite_run(
    suite_name: str, files: list[Path], uri: str | None = None, artifact_path: str = "report"
) -> bool:
    """Attach files and folders (a report's, with its tables and figures) under `artifact_path`
    to the suite's parent run; False when the store has no run of this suite (nothing to attach
    to: the files stay where they are)."""
    from mlflow.tracking import MlflowClient

    uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI
    if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).exists():
        return False  # no store, so no run: opening one would create an empty database
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(suite_name)
    runs = (
        client.search_runs(
            [exp.experiment_id], "tags.`fedbench.kind` = 'suite'", order_by=["attributes.start_time ASC"], max_results=1
        )
        if exp
        else []
    )
    if not runs:
        return False
    for f in files:
        if Path(f).is_dir():  # its content, sub-folders kept
            client.log_artifacts(runs[0].info.run_id, str(f), artifact_path)
        else:
            client.log_artifact(runs[0].info.run_id, str(f), artifact_path)
    return True
