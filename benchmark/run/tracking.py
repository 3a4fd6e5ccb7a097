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
- Healing: `heal` (every `fedbench run`, and `fedbench sync`) mirrors again every finished job
  whose run is missing, KILLED or lacks its final numbers, through the same idempotent
  `JobMirror.mirror` that ends a live job (mlflow_mirror.py), or, a job with no run, in a batch.
- A job has its run while it runs once it has run for LIVE_AFTER_S; a shorter one's run is written
  after it ends by the writer thread, with others (mlflow_writer.py, mlflow_batch.py). So `run` opens the
  store on that thread (`background`): the first job trains while MLflow is imported, and what needs the
  store waits for it (`after_connect`).
- A run with nothing to train makes no MLflow call when the mark of the last fully mirrored run still
  vouches for the store (mlflow_in_sync.py, MirroredTracker).
- Bounded: HTTP calls time out in seconds (HTTP_LIMITS), an http(s) store is probed first, and
  after a network failure the tracker pauses for the rest of the process (one warning); the time
  spent in tracking calls (`seconds`) is excluded from a job's recorded wall time.

Default store: a local SQLite file (`sqlite:///mlflow.db` in the working directory, which is
what `mlflow ui` opens); `--tracking-uri` or $MLFLOW_TRACKING_URI override it.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmark.run import mlflow_in_sync, mlflow_writer
from benchmark.run.mlflow_mirror import JobMirror, source_tags
from benchmark.run.mlflow_new_store import sqlite_file
from benchmark.run.mlflow_writer import Finished, Writer
from benchmark.store.job_store import job_lock
from benchmark.store.layout import Store
from benchmark.store.locks import FileLock, suite_lock
from benchmark.store.records import FailedSummary, JobSummary, RoundRecord

log = logging.getLogger(__name__)
DEFAULT_URI = "sqlite:///mlflow.db"
# an unreachable tracking server fails a call in about 10 s, never after MLflow's default minutes of
# retries (7 retries, 120 s timeout); the environment may set other values
HTTP_LIMITS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "5",
}
PROBE_SECONDS = 3.0  # a TCP connect to an http(s) store before any MLflow call


def store_uri(uri: str | None) -> str:
    return uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI


def bounded_client(uri: str):
    """An MlflowClient whose HTTP calls are bounded (HTTP_LIMITS); an http(s) server that accepts no
    connection within PROBE_SECONDS raises ConnectionError at once instead of after the retries."""
    import socket
    from urllib.parse import urlparse

    from mlflow.tracking import MlflowClient

    for key, value in HTTP_LIMITS.items():
        os.environ.setdefault(key, value)
    parsed = urlparse(uri)
    if parsed.scheme in ("http", "https"):
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        try:
            socket.create_connection((parsed.hostname, port), timeout=PROBE_SECONDS).close()
        except OSError as err:
            raise ConnectionError(f"tracking server {uri} unreachable: {err}") from None
    return MlflowClient(uri)


def runs_page(uri: str, experiment_id: str) -> str:
    """The address of the experiment's runs table: `mlflow ui`'s default (127.0.0.1:5000) for a file
    store, the server itself for an http(s) one. MLflow 3's UI opens an experiment in its GenAI view
    (traces, empty for fedbench) unless the address asks for the model-training one."""
    server = uri.rstrip("/") if uri.startswith(("http://", "https://")) else "http://127.0.0.1:5000"
    return f"{server}/#/experiments/{experiment_id}/runs?workflowType=machine_learning"


@functools.cache  # git is asked once a process: a no-op's in-sync check and the tracker read the same tags
def provenance_tags() -> dict[str, str]:
    """Code and environment of this process, under the keys a job's own environment record uses
    (mlflow_mirror.environment_tags): git commit (MLflow's own tag), dirty flag, versions, host."""
    import platform

    from benchmark.run.environment import git_commit, package_version
    from benchmark.run.mlflow_mirror import environment_tags

    record = {"python": platform.python_version(), "host": platform.node()}
    record |= {package: package_version(package) for package in ("fedbench", "torch", "mlflow", "numpy")}
    if git := git_commit():
        record |= {"git_commit": git[0], "git_dirty": git[1]}
    return environment_tags(record)


def experiment_id(client, name: str) -> str:
    """The experiment `name`'s id, created if the store has none."""
    if exp := client.get_experiment_by_name(name):
        return exp.experiment_id
    try:
        return client.create_experiment(name)
    except Exception:  # created meanwhile by another process (a remote store has no lock file)
        if exp := client.get_experiment_by_name(name):
            return exp.experiment_id
        raise


class NullTracker:
    uri: str | None = None  # where runs go; None: nowhere
    writes = False  # whether it writes runs (the headline numbers are computed only for one that does)
    seconds: float = 0.0  # spent in tracking calls so far (a job's recorded wall time excludes it)

    def heal(self, jobs) -> int:
        """Mirror the finished jobs of `jobs` whose runs are missing or incomplete; how many."""
        return 0

    def start_job(self, job, config: dict) -> None: ...
    def log_records(self, records: list[RoundRecord], job_id: str | None = None) -> None: ...
    def end_job(self, summary: JobSummary | FailedSummary, files: list[Path]) -> None: ...
    def summarise(self, suite, jobs, headline: list) -> None:
        """The suite's shared settings on its parent run, and its `headline` numbers
        (report.entry_tables.Headline) as runs under it."""

    def attach(self, files: list[Path], artifact_path: str | None = None) -> None:
        """Files for the suite's parent run (the suite file, the report's tables and figures)."""

    def close(self, status: str = "FINISHED") -> None: ...


class MirroredTracker(NullTracker):
    """A run with nothing to train into a store that already mirrors its suite (mlflow_in_sync.py): no
    MLflow call, not even its import; `uri` and `experiment_id` say where the runs are."""

    def __init__(self, uri: str, experiment_id: str):
        self.uri, self.experiment_id = uri, experiment_id


def already_mirrored(suite_name: str, uri: str | None, results: Store, suite_file: Path | None, jobs):
    """A MirroredTracker when the mark left by the last fully mirrored run vouches that the store still
    holds every one of `jobs` (all done) as it is on disk; else None (the store is opened and checked)."""
    uri = store_uri(uri)
    provenance = {**provenance_tags(), **source_tags(str(suite_file) if suite_file else None)}
    now = mlflow_in_sync.state(uri, results, [job.id for job in jobs], suite_file, provenance)
    found = mlflow_in_sync.mirrored_experiment(mlflow_in_sync.mark_path(results, suite_name), now)
    return MirroredTracker(uri, found) if found else None


def unusable_store(uri: str | None, err: Exception) -> str:
    first = (str(err).splitlines() or [""])[0][:160]
    return (
        f"MLflow store {uri or 'default'} cannot be used ({type(err).__name__}: {first}); "
        "running without tracking, results on disk are unaffected"
    )


OFFLINE_NOTE = "`fedbench sync SUITE` or the next `fedbench run` mirrors the results"


def after_connect(method):
    """A call that needs the store waits until it is open (a tracker opened in the background: the first
    job trains meanwhile), and does nothing where it could not be opened."""

    @functools.wraps(method)
    def connected(self, *args, **kwargs):
        self.connected.wait()
        return None if self.offline else method(self, *args, **kwargs)

    return connected


def tracking_may_fail(method):
    """A tracking call that raises warns (results on disk are unaffected) instead of failing the job;
    an unreachable store pauses tracking for the rest of this process (one warning, no call waits
    again). The time each call takes is added to `seconds`."""

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        if self.offline:
            return None
        began = time.monotonic()
        try:
            return method(self, *args, **kwargs)
        except Exception as err:
            self.failed(method.__name__, err)
            if method.__name__ == "start_job":
                self.open.pop(args[0].id, None)  # nothing to log into for this job
        finally:
            if threading.current_thread() is not self.writer:  # the writer thread's calls take no job's time
                self.seconds += time.monotonic() - began

    return guarded


def is_unreachable(err: BaseException) -> bool:
    """A network failure (refused, timed out, retries exhausted), not a refused request."""
    text = str(err)
    return isinstance(err, (ConnectionError, TimeoutError)) or any(
        s in text for s in ("Max retries exceeded", "Connection refused", "timed out", "Failed to establish")
    )


def store_lock(uri: str) -> FileLock | None:
    """A lock beside a SQLite store's file: its creation (alembic migrations) is not concurrency-safe."""
    database = sqlite_file(uri)
    return None if database is None else FileLock(Path(f"{database}.lock"))


@dataclass
class ChildRun:
    job: object  # the Job
    config: dict
    run_id: str | None = None  # None: none yet (a job shorter than LIVE_AFTER_S gets it from the writer)
    logged_upto: int = 0  # the last round it has: a resumed job logs only what follows
    started: float = field(default_factory=time.monotonic)


class MlflowTracker(NullTracker):
    writes = property(lambda self: not self.offline)

    def __init__(
        self,
        suite_name: str,
        uri: str | None = None,
        results: Store | None = None,
        suite_file: Path | None = None,
        background=None,
    ):
        """Connect, find or create the suite's experiment and parent run; raises if the store
        cannot be reached at all (the CLI then says so and runs without tracking). `background(message)`
        (a tracker with a writer thread): that thread connects, while this one goes on to the jobs,
        whose runs are due only when they end or pass LIVE_AFTER_S; a store it cannot open is then
        told to `background`, and the process runs on without tracking."""
        # a new store's "Creating initial MLflow database tables..." lines are MLflow's chatter, not the run's
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
        self.uri = store_uri(uri)
        self.suite = suite_name
        self.suite_file = suite_file
        self.results = results  # the results folder it mirrors (None: it mirrors what it is told only)
        self.open: dict[str, ChildRun] = {}  # job id -> its run, while the job runs
        self.last_started: str | None = None
        self.offline, self.seconds, self.failures = False, 0.0, 0
        self.summarised: list[str] | None = None  # the jobs whose suite summary was written (mlflow_in_sync.py)
        self.state = threading.RLock()  # the open runs, shared with the writer thread
        self.connected = threading.Event()
        self.running = suite_lock(self.results, suite_name) if self.results else None
        if self.running:
            self.running.acquire(shared=True)
        self.writer = None
        if self.results is not None and mlflow_writer.LIVE_AFTER_S > 0:  # runs are mirrored from results/
            self.writer = Writer(self.write_finished, self.give_long_jobs_their_run)
        if background and self.writer is not None:
            self.writer.first = functools.partial(self._connect_or_go_offline, background)
        else:
            try:
                self._connect()
            except BaseException:
                if self.running:
                    self.running.release()
                raise
        if self.writer is not None:
            self.writer.start()

    def _connect(self) -> None:
        import mlflow

        lock = store_lock(self.uri)
        if lock:
            lock.acquire()
        try:
            self._new_store()
            self.client = bounded_client(self.uri)
            mlflow.set_tracking_uri(self.uri)
            self.experiment_id = self._experiment(self.suite)
            self.parent = self._parent(self.suite)
            self.client.update_run(self.parent, status="RUNNING")
        finally:
            if lock:
                lock.release()
        suite_file = self.suite_file
        self.provenance = {**provenance_tags(), **source_tags(str(suite_file) if suite_file else None)}
        self.mirror = JobMirror(self.client, self.experiment_id, self.parent, self.suite, self.provenance)
        self.batch = self._batch_writer()
        if self.running:
            self.close_abandoned_runs()  # before any heal: it closes only runs no process is behind
        self.connected.set()
        self.describe_parent(suite_file)

    def _connect_or_go_offline(self, warn) -> bool:
        """The writer thread's first step; False (the thread ends): the store cannot be used."""
        try:
            self._connect()
            return True
        except Exception as err:
            warn(unusable_store(self.uri, err))
            self.offline, self.uri = True, None
            return False
        finally:
            self.connected.set()

    def _new_store(self) -> None:
        """A new SQLite store copied from one MLflow migrated once (mlflow_new_store.py)."""
        from benchmark.run.mlflow_new_store import create_sqlite_store

        try:
            create_sqlite_store(self.uri)
        except Exception as err:  # a cache that cannot be written: MLflow migrates the new store as always
            log.info("MLflow: new store migrated by MLflow (no template: %s: %s)", type(err).__name__, err)

    def _batch_writer(self):
        """Many new runs in one transaction, where the store allows it (mlflow_batch.py); None: call by call."""
        from benchmark.run.mlflow_batch import SqlBatchWriter

        try:
            return SqlBatchWriter.of(self.client, self.experiment_id)
        except Exception as err:  # e.g. a store MLflow can open but not this way: call by call still works
            log.info("MLflow: new runs written call by call (%s: %s)", type(err).__name__, err)
            return None

    def failed(self, what: str, err: Exception) -> None:
        """A tracking call that raised: a warning (the results on disk are complete); an unreachable store
        pauses tracking for the rest of the process."""
        self.offline, self.failures = is_unreachable(err), self.failures + 1
        log.warning(
            "MLflow (%s) %s failed: %s: %s; the results on disk are complete%s, %s",
            self.uri,
            what,
            type(err).__name__,
            str(err).splitlines()[0] if str(err) else "",
            "; tracking paused for this run" if self.offline else "",
            OFFLINE_NOTE,
        )

    def _experiment(self, name: str) -> str:
        return experiment_id(self.client, name)

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

    def _jobdir(self, job_id: str):
        from benchmark.store.job_dir import JobDir

        return JobDir(self.results, job_id) if self.results else None

    @tracking_may_fail
    def close_abandoned_runs(self) -> None:
        """Child runs RUNNING without a process behind them (killed by SIGKILL, a power cut)."""
        stale = self.client.search_runs(
            [self.experiment_id], "tags.`fedbench.kind` = 'job' and attributes.status = 'RUNNING'"
        )
        for run in stale:
            lock = job_lock(self.results, run.data.tags.get("fedbench.job_id", "?"))
            if lock.acquire(blocking=False):  # held while closing, so its job cannot restart meanwhile
                try:
                    self.client.set_terminated(run.info.run_id, "KILLED")
                finally:
                    lock.release()

    @tracking_may_fail
    def heal(self, jobs) -> int:
        """Every job of `jobs` with a summary on disk whose run is missing, still RUNNING/KILLED
        or lacks its final numbers is mirrored again from its folder (a job killed after its
        summary was written, or during an outage). Jobs another process holds are left to it."""
        if self.results is None:
            return 0
        on_disk = [job for job in jobs if self._jobdir(job.id).summary.exists()]
        return self._heal(on_disk) if on_disk else 0  # a fresh suite's first job need not wait for the store

    @after_connect
    def _heal(self, jobs) -> int:
        from mlflow.entities import ViewType

        if self.batch is not None:  # the selected jobs' runs, only what is_complete reads
            runs = self.batch.runs_of([job.id for job in jobs])
        else:
            runs = {
                r.data.tags.get("fedbench.job_id"): r
                for r in self.client.search_runs(
                    [self.experiment_id], "tags.`fedbench.kind` = 'job'", ViewType.ACTIVE_ONLY, max_results=50000
                )
            }
        todo = []
        for job in jobs:
            summary = self._jobdir(job.id).read_summary()
            if summary and not (job.id in runs and self.mirror.is_complete(runs[job.id], summary)):
                todo.append(Finished(job, summary, self._jobdir(job.id).mirrored_files))
        healed = 0
        for i in range(0, len(todo), mlflow_writer.BATCH_JOBS):  # a job running elsewhere is mirrored by its process
            batch = todo[i : i + mlflow_writer.BATCH_JOBS]
            healed += len(batch) - len(self.mirror_finished(batch, check=self._undamaged))
        if healed:
            log.info("MLflow: %d finished job(s) mirrored again from %s", healed, self.results.root)
        return healed

    def _undamaged(self, item: Finished) -> bool:
        """A damaged job is never mirrored as complete: its files are set aside and `run` trains it again."""
        jobdir = self._jobdir(item.job.id)
        if jobdir.damage(every_line=True):
            jobdir.set_aside_damaged(every_line=True)
            return False
        return True

    def mirror_finished(self, items: list[Finished], check=None) -> list[Finished]:
        """Each job's run brought up to its folder under the job's lock: new runs at once (mlflow_batch.py),
        a run that exists (a resumed job's, a partly mirrored one) through JobMirror.mirror. Returns the
        jobs whose lock another holder has (left to it); `check(item)` False: skipped."""
        locks, held, left = [], [], []
        for item in items:
            lock = job_lock(self.results, item.job.id)
            if lock.acquire(blocking=False):
                locks.append(lock)
                held.append(item)
            else:
                left.append(item)
        try:
            held = [item for item in held if check is None or check(item)]
            ids = [item.job.id for item in held]
            have = self.batch.runs_of(ids).keys() if self.batch else set(ids)
            if new := [item for item in held if item.job.id not in have]:
                self.batch.write([self.mirror.new_run(i.job, self._jobdir(i.job.id), i.summary, i.files) for i in new])
            for item in held:
                if item.job.id in have:
                    self.mirror.mirror(item.job, self._jobdir(item.job.id), item.summary, item.files)
        finally:
            for lock in locks:
                lock.release()
        return left

    def write_finished(self, batch: list[Finished]) -> list[Finished]:
        """The writer thread's batch (never raises: a failure warns, and the next `run` or `sync` heals)."""
        if self.offline:
            return []
        try:
            return self.mirror_finished(batch)
        except Exception as err:
            self.failed(f"writing {len(batch)} finished job(s)", err)
            return []

    def give_long_jobs_their_run(self) -> None:
        """The writer thread's tick: a job running for LIVE_AFTER_S gets its run, with the rounds on disk."""
        if self.offline:
            return
        now = time.monotonic()
        with self.state:
            for child in list(self.open.values()):
                if child.run_id is None and now - child.started >= mlflow_writer.LIVE_AFTER_S:
                    try:
                        self._live(child, self._jobdir(child.job.id).read_metrics())
                    except Exception as err:
                        self.failed(f"creating the run of job {child.job.id}", err)
                        self.open.pop(child.job.id, None)  # its run is written from its folder later
                        return

    def _live(self, child: ChildRun, records: list[RoundRecord]) -> None:
        """The job's run found or created (RUNNING), and `records` it lacks logged."""
        if (found := self.mirror.find(child.job.id)) is None:  # a new run starts RUNNING, with no rounds
            child.run_id = self.mirror.create(child.job, child.config)
        else:
            child.run_id = found.info.run_id
            self.client.update_run(child.run_id, status="RUNNING")
            child.logged_upto = self.mirror.logged_upto(child.run_id)
        if records:
            child.logged_upto = self.mirror.log_rounds(child.run_id, records, child.logged_upto)

    @tracking_may_fail
    def start_job(self, job, config: dict) -> None:
        """The job's run now where no writer thread defers it (no results folder; LIVE_AFTER_S = 0),
        else when the job has run for LIVE_AFTER_S or, a shorter job, with the writer's next batch."""
        self.last_started = job.id
        child = ChildRun(job, config)
        with self.state:
            self.open[job.id] = child
            if self.writer is None:
                self._live(child, [])

    @tracking_may_fail
    def log_records(self, records: list[RoundRecord], job_id: str | None = None) -> None:
        """Rounds for a job's run; a job with no run yet has them written with its run (from metrics.jsonl)."""
        with self.state:
            child = self.open.get(job_id or self.last_started)
            if child is not None and child.run_id is not None:
                child.logged_upto = self.mirror.log_rounds(child.run_id, records, child.logged_upto)

    @tracking_may_fail
    def end_job(self, summary: JobSummary | FailedSummary, files: list[Path]) -> None:
        """The job's folder mirrored, the summary being the one just written (the same function that heals):
        now where the job has its run, else queued for the writer thread's next batch."""
        with self.state:
            child = self.open.pop(summary.job_id, None)
        if child is None:  # the job failed before its run could be created
            return
        if child.run_id is None:
            self.writer.put(Finished(child.job, summary, files))
            return
        jobdir = self._jobdir(summary.job_id)
        if jobdir is None:  # no results folder to read (a tracker used on its own)
            self.mirror.finish(child.run_id, summary, files)
            return
        self.mirror.mirror(child.job, jobdir, summary, files, live=(child.run_id, child.logged_upto))

    @tracking_may_fail
    @after_connect
    def summarise(self, suite, jobs, headline: list) -> None:
        """Parent run: params = the settings every job of the selection shares (a value the run
        already has from an earlier invocation is kept: MLflow params are immutable), inputs = each
        dataset the jobs trained on (so the runs table's Dataset column is filled); `headline`
        (report.entry_tables.headline_numbers) as runs under it (headline_runs)."""
        from mlflow.entities import Param

        from benchmark.suite.dotted import flatten

        if self.results is None or not jobs:
            return
        flat = [flatten(json.loads(p.read_text())) for j in jobs if (p := self._jobdir(j.id).config).exists()]
        shared = {k: v for k, v in flat[0].items() if all(f.get(k) == v for f in flat[1:])} if flat else {}
        shared.pop("job_id", None)
        have = self.client.get_run(self.parent).data.params
        params = [Param(k[:250], v) for k, v in {"suite": suite.name, **shared}.items() if k[:250] not in have]
        for i in range(0, len(params), 100):
            self.client.log_batch(self.parent, params=params[i : i + 100])
        summaries = [s for j in jobs if isinstance(s := self._jobdir(j.id).read_summary(), JobSummary)]
        for dataset in {(s.dataset, s.data_fingerprint): s for s in summaries}.values():
            self.mirror.log_dataset(self.parent, dataset)  # MLflow keeps one input per (name, digest)
        self.headline_runs(headline)
        self.summarised = [job.id for job in jobs]

    def headline_runs(self, headline: list) -> None:
        """A run per (dataset entry, method) under the parent (`fedbench.kind` = headline), its headline
        number as the metric `<entry>/<metric>`: MLflow's chart view draws a chart per metric key, a bar per
        run, in a section per part before the `/`, so each entry's methods compare in one chart (one metric
        key per method on one run would give a chart per method). Found again by tag: a later summary
        updates the same runs."""
        from mlflow.entities import Metric

        from benchmark.run.mlflow_mirror import metric_key

        found = {
            r.data.tags.get("fedbench.headline"): r.info.run_id
            for r in self.client.search_runs([self.experiment_id], "tags.`fedbench.kind` = 'headline'")
        }
        now = int(time.time() * 1000)
        for h in headline:
            name = f"{h.entry}/{h.method}"
            run_id = (
                found.get(name)
                or self.client.create_run(
                    self.experiment_id,
                    run_name=f"{h.method} · {h.entry} · mean over seeds",
                    tags={
                        "mlflow.parentRunId": self.parent,
                        "fedbench.kind": "headline",
                        "fedbench.suite": self.suite,
                        "fedbench.headline": name,
                        "fedbench.dataset": h.entry,
                        "fedbench.method": h.method,
                    },
                ).info.run_id
            )
            metric = Metric(metric_key(f"{h.entry}/{h.metric}"), h.value, now, 0)
            self.client.log_batch(run_id, metrics=[metric, Metric("seeds", h.seeds, now, 0)])
            self.client.set_terminated(run_id, "FINISHED")

    @tracking_may_fail
    @after_connect
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

    def close(self, status: str = "FINISHED") -> None:
        """End this process's part: the writer's queue written (a bounded wait), a child still open was
        interrupted; the parent is closed by the last process running the suite (the suite lock is
        released even when the store is gone)."""
        if self.writer is not None and (left := self.writer.close()):
            log.warning(
                "MLflow (%s): %d finished job(s) not mirrored yet (still writing after %.0f s, or held by "
                "another process); their results on disk are complete, %s",
                self.uri,
                left,
                mlflow_writer.CLOSE_WAIT_S,
                OFFLINE_NOTE,
            )
        self._end_children()
        if self.running is None:
            self._end_parent(status)
            return
        self.running.release()
        if self.running.acquire(blocking=False):  # no other process is running this suite
            try:
                self._end_parent(status)
            finally:
                self.running.release()

    @tracking_may_fail
    @after_connect
    def _end_children(self) -> None:
        with self.state:
            while self.open:
                child = self.open.popitem()[1]
                if child.run_id is None:  # interrupted before it had a run: it gets one, with its rounds so far
                    self._live(child, self._jobdir(child.job.id).read_metrics())
                self.client.set_terminated(child.run_id, "KILLED")

    @tracking_may_fail
    @after_connect
    def _end_parent(self, status: str) -> None:
        self.client.set_terminated(self.parent, status)
        if status == "FINISHED" and self.summarised is not None and not self.failures:
            self._mark_mirrored()

    def _mark_mirrored(self) -> None:
        """The last process of the suite ended with its store mirroring it whole: a later `run` with
        nothing to train may leave MLflow alone while nothing changes (mlflow_in_sync.py)."""
        if self.results is None or self.open or (self.writer is not None and self.writer.pending()):
            return
        now = mlflow_in_sync.state(self.uri, self.results, self.summarised, self.suite_file, self.provenance)
        mlflow_in_sync.write_mark(mlflow_in_sync.mark_path(self.results, self.suite), now, self.experiment_id)


def attach_to_suite_run(
    suite_name: str, files: list[Path], uri: str | None = None, artifact_path: str = "report"
) -> bool:
    """Attach files and folders (a report's, with its tables and figures) under `artifact_path`
    to the suite's parent run; False when the store has no run of this suite (nothing to attach
    to: the files stay where they are). An unreachable server raises within seconds."""
    uri = store_uri(uri)
    if (database := sqlite_file(uri)) is not None and not database.exists():
        return False  # no store, so no run: opening one would create an empty database
    client = bounded_client(uri)
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
