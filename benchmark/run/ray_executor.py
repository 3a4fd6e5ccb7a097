"""Run a suite's jobs as Ray tasks: a local cluster or an existing one (`--ray-address`),
fractional GPUs, any number of nodes, and no filesystem shared with them.

The driver owns `results/`. A task (ray_worker.py) runs its job with the local executor's code
in a scratch folder on its node and reports through a queue the driver drains: start,
every evaluated round (progress display and MLflow, live), how far a long round has come,
every checkpoint (written into the driver's results folder at once). The finished job's files come back as the task's
result. A task whose worker or node dies is resubmitted with the last checkpoint the driver
holds, so the job resumes on whichever node Ray picks, up to `ATTEMPTS` times.

Code reaches the workers through Ray's runtime environment (`py_modules`: the fedbench
package this driver imports, installed or a working tree; a caller that runs `ray.init`
itself passes `runtime_env=code_runtime_env()`); nodes need only the Python dependencies.
Datasets are looked up on each node (its $FEDBENCH_DATA or the suite's `root:`); a node without
one stages it (staging.py) from the dataset's URI, else from the driver's copy shipped once
through Ray's object store; a node that can do neither stops the suite with an error naming it.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field

from benchmark.engine.round_tally import ClientsDone
from benchmark.errors import DatasetMissing, UserError
from benchmark.run.executor import data_fingerprint, failed_summary
from benchmark.run.executor_base import EXECUTORS, Executor
from benchmark.run.progress import LogProgress, log
from benchmark.run.ray_worker import code_runtime_env, run_remote_job
from benchmark.run.staging import DEFAULT_SHIP_MAX_MB, MB, Offer, make_offers, parse_uri_options
from benchmark.run.stale import marked, set_aside_stale
from benchmark.run.tracking import NullTracker
from benchmark.store.job_dir import RESUME_FILES, JobDir, atomic_write_json
from benchmark.store.job_status import TERMINAL
from benchmark.store.job_store import job_lock, link_into_suite
from benchmark.store.layout import Store
from benchmark.store.locks import FileLock
from benchmark.store.records import FailedSummary, JobSummary, RoundRecord, summary_from_json
from benchmark.suite.expand import Job

ATTEMPTS = 3  # per job: a lost worker or node costs an attempt, resumed from the last checkpoint
POLL_S = 0.5  # how often the driver drains the progress queue


def import_ray():
    try:
        import ray
    except ImportError:
        raise UserError("the Ray executor needs Ray: pip install 'fedbench[ray]'") from None
    return ray


@dataclass
class JobRun:
    """The driver's view of one job across its attempts."""

    job: Job
    attempt: int = 0  # 1 for the first submission
    placements: list[dict] = field(default_factory=list)  # per attempt: node, pid, code folder


class Driver:
    """Submits tasks, applies their messages to results/, the tracker and the display."""

    def __init__(
        self,
        ray,
        suite: str,
        store: Store,
        device: str,
        tracker,
        progress,
        stop_after: int | None,
        options: dict,
        threads: int,
        offers: dict[tuple, Offer],
        keep_stale: bool = False,
    ):
        self.ray, self.suite, self.store, self.device = ray, suite, store, device
        self.offers = offers  # (dataset, root) -> how a node without it stages it
        self.keep_stale = keep_stale
        self.tracker, self.progress, self.stop_after, self.threads = tracker, progress, stop_after, threads
        self.task = ray.remote(run_remote_job).options(**options)
        from ray.util.queue import Queue

        # on the head node: the queue must outlive any worker node
        self.queue = Queue(actor_options={"num_cpus": 0, "resources": {"node:__internal_head__": 0.001}})
        self.pending: dict = {}  # object ref -> JobRun
        self.runs: dict[str, JobRun] = {}
        self.locks: dict[str, FileLock] = {}

    def jobdir(self, job: Job) -> JobDir:
        return JobDir(self.store, job.id)

    def reusable(self, job: Job) -> dict | None:
        """The summary of a job done on the same data (as the local executor decides), else None.
        The driver may lack the data (the nodes read their own copies): then a done job is reused
        on its summary alone, saying so."""
        jobdir = self.jobdir(job)
        if not jobdir.is_done():
            return None
        return marked(job, self._same_data(job, jobdir), self.keep_stale)

    def _same_data(self, job: Job, jobdir: JobDir) -> dict | None:
        try:
            fingerprint = data_fingerprint(job.config)
        except DatasetMissing:
            log.warning(
                "job %s: done, reused without checking its data fingerprint (its dataset is not on this "
                "machine, only on the nodes)",
                job.id,
            )
            return jobdir.skipped_summary()
        if done := jobdir.skipped_summary(fingerprint):
            return done
        jobdir.set_aside_other_data(fingerprint)
        return None

    def submit(self, job: Job) -> None:
        jobdir = self.jobdir(job)
        run = self.runs.setdefault(job.id, JobRun(job))
        run.attempt += 1
        if run.attempt == 1:
            jobdir.set_aside_damaged()  # under the job's lock (claim)
            atomic_write_json(jobdir.config, _config_json(job, self.suite))
        resume = jobdir.read_files(RESUME_FILES) if jobdir.checkpoint.exists() else {}
        offer = self.offers.get((job.config.dataset.name, job.config.dataset.root))
        ref = self.task.remote(job, self.suite, self.device, self.stop_after, self.threads, resume, self.queue, offer)
        self.pending[ref] = run

    def drain(self) -> None:
        # the kinds of message run/ray_worker.py's Relay sends
        handlers = {
            "where": self.on_where,
            "start": self.on_start,
            "staged": self.on_staged,
            "records": self.on_records,
            "rounds": self.on_rounds,
            "checkpoint": self.on_checkpoint,
            "clients": self.on_clients,
        }
        count = self.queue.qsize()
        messages = self.queue.get_nowait_batch(count) if count else []
        for kind, job_id, payload in messages:
            handlers[kind](self.runs[job_id], payload)

    def on_where(self, run: JobRun, payload: dict) -> None:
        run.placements.append(payload)
        if run.attempt == 1:
            self.progress.job_started(run.job)
        log.info("job %s attempt %d runs on %s", run.job.id, run.attempt, payload["where"])

    def on_start(self, run: JobRun, config: dict) -> None:
        # the driver's config: the worker's may read a staged copy (another dataset root)
        self.tracker.start_job(run.job, _config_json(run.job, self.suite))  # a later attempt continues the job's run

    def on_staged(self, run: JobRun, staged: dict) -> None:
        run.placements[-1]["staged"] = staged
        log.info(
            "%s staged dataset %s (%.1f MB, sha256 %s%s) from %s into %s",
            run.placements[-1]["where"],
            staged["dataset"],
            staged["bytes"] / MB,
            staged["sha256"][:16],
            "" if staged["verified"] else ", not pinned",
            staged["from"],
            staged["folder"],
        )

    def on_records(self, run: JobRun, records: list[dict]) -> None:
        """Records as the worker sent them (their JSON form), typed here."""
        self.tracker.log_records([RoundRecord.from_json(r) for r in records], run.job.id)  # only those its run lacks

    def on_rounds(self, run: JobRun, rounds: list[tuple[dict, float]]) -> None:
        records = [RoundRecord.from_json(rec) for rec, _ in rounds]
        for rec in records:
            self.progress.evaluated(run.job, rec)
        self.tracker.log_records(records, run.job.id)

    def on_clients(self, run: JobRun, done: ClientsDone) -> None:
        self.progress.within_round(run.job, done)

    def on_checkpoint(self, run: JobRun, files: dict[str, bytes]) -> None:
        self.jobdir(run.job).write_files(files)

    def collect(self, ref) -> tuple[Job, JobSummary | FailedSummary] | None:
        """The job and its summary once it is over; None when it was resubmitted."""
        run = self.pending.pop(ref)
        job, jobdir = run.job, self.jobdir(run.job)
        try:
            result = self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as err:  # raised outside run_job: imports, the queue
            if isinstance(err.cause, ImportError):
                raise UserError(
                    f"job {job.id}: a Ray node cannot import what fedbench needs ({err.cause}). fedbench's "
                    "own code is shipped to the nodes; its dependencies (torch, pydantic, ...) must be "
                    "installed there"
                ) from None
            return job, self.record_failure(job, f"{type(err.cause).__name__} on its Ray worker: {err.cause}", str(err))
        except self.ray.exceptions.RuntimeEnvSetupError as err:
            raise UserError(
                f"Ray could not set up fedbench's runtime environment (its code) on a node: {err}"
            ) from None
        except self.ray.exceptions.RayError as err:  # the worker or its node died
            if run.attempt < ATTEMPTS:
                ckpt = "its last checkpoint" if jobdir.checkpoint.exists() else "the start (no checkpoint yet)"
                log.warning(
                    "job %s: %s (worker or node lost); resubmitted from %s, attempt %d/%d",
                    job.id,
                    type(err).__name__,
                    ckpt,
                    run.attempt + 1,
                    ATTEMPTS,
                )
                self.submit(job)
                return None
            return job, self.record_failure(
                job, f"lost its Ray worker {ATTEMPTS} times; last: {type(err).__name__}: {err}", traceback.format_exc()
            )
        if "user_error" in result:
            raise UserError(result["user_error"])
        # the summary as the worker sent it (its JSON form), with where it ran: kept as summary.json's `ray`
        summary = summary_from_json({**result["summary"], "ray": {"attempts": run.placements}})
        jobdir.write_files({k: v for k, v in result["files"].items() if k != "summary.json"})
        atomic_write_json(jobdir.summary, summary.to_json())
        if summary.status in TERMINAL:  # as run_job does: a failed or stopped job may resume
            jobdir.discard_checkpoint()
        self.tracker.end_job(summary, jobdir.mirrored_files)
        return job, summary

    def record_failure(self, job: Job, error: str, trace: str) -> FailedSummary:
        jobdir = self.jobdir(job)
        summary = failed_summary(job, self.suite, error, trace)
        summary.extra["ray"] = {"attempts": self.runs[job.id].placements}
        atomic_write_json(jobdir.summary, summary.to_json())
        self.tracker.end_job(summary, [jobdir.summary])
        return summary

    def cancel_all(self) -> None:
        for ref in self.pending:
            self.ray.cancel(ref, force=True)

    # job locks: the driver trains a job (on whichever node) for as long as it holds its lock,
    # as the local executor does, so processes sharing results/ never train one job twice
    def claim(self, job: Job, wait: bool) -> bool:
        lock = job_lock(self.store, job.id)
        if not lock.acquire(blocking=wait):
            return False
        self.locks[job.id] = lock
        self.jobdir(job).remove_stale_temps()
        return True

    def release(self, job: Job) -> None:
        self.locks.pop(job.id).release()

    def release_all(self) -> None:
        while self.locks:
            self.locks.popitem()[1].release()


def _check_device(device: str, gpus_per_job: float) -> None:
    if device.startswith("cuda") and gpus_per_job <= 0:
        raise UserError(f"--device {device} under Ray needs --gpus-per-job > 0 (e.g. 0.25 for 4 jobs per GPU)")
    if device.startswith("cuda:"):
        raise UserError(f"--device {device}: under Ray use --device cuda; Ray assigns each job its GPU")


def check_resources(available: dict, gpus_per_job: float, cpus_per_job: float) -> None:
    """A task asking for more than the whole cluster has would wait forever: refuse it now."""
    for flag, want, kind in (("--gpus-per-job", gpus_per_job, "GPU"), ("--cpus-per-job", cpus_per_job, "CPU")):
        have = available.get(kind, 0)
        if want > have:
            raise UserError(
                f"{flag} {want:g}: the Ray cluster has {have:g} {kind}(s), so no job could ever start; "
                f"lower {flag} or join a cluster that has them (--ray-address)"
            )


def run_jobs_ray(
    jobs: list[Job],
    suite: str,
    store: Store,
    device: str = "cpu",
    tracker=None,
    progress=None,
    stop_after: int | None = None,
    address: str | None = None,
    gpus_per_job: float = 0.0,
    cpus_per_job: float = 1.0,
    data_uris: dict | None = None,
    ship_max_mb: float = DEFAULT_SHIP_MAX_MB,
    keep_stale: bool = False,
) -> dict[str, dict]:
    """Run every unfinished job as a Ray task; returns job id -> summary (finished, skipped, or failed).
    `data_uris`: dataset name -> DataUri for nodes without it (else the driver's copy is shipped
    when it is at most `ship_max_mb`)."""
    _check_device(device, gpus_per_job)
    ray = import_ray()
    tracker = tracker or NullTracker()
    progress = progress or LogProgress(jobs)
    started_here = not ray.is_initialized()
    if started_here:  # address None: start a local cluster (or join $RAY_ADDRESS)
        ray.init(address=address, runtime_env=code_runtime_env())
    try:
        check_resources(ray.cluster_resources(), gpus_per_job, cpus_per_job)
        offers = make_offers(jobs, data_uris or {}, ship_max_mb * MB, ray.put)
    except BaseException:
        if started_here:
            ray.shutdown()
        raise
    for offer in offers.values():
        if offer.uri and not offer.sha256:
            log.warning(
                "dataset %s: %s is not pinned (no #sha256=<hex>): nodes cannot check what they fetch",
                offer.dataset,
                offer.source,
            )
        elif offer.ref is not None:
            log.info(
                "dataset %s: %s (%.1f MB) is in Ray's object store for nodes that lack it",
                offer.dataset,
                offer.source,
                offer.size / MB,
            )
    options = {"num_cpus": cpus_per_job, "num_gpus": gpus_per_job, "max_retries": 0}
    summaries: dict[str, dict] = {}
    driver = None
    try:
        with progress:
            driver = Driver(
                ray,
                suite,
                store,
                device,
                tracker,
                progress,
                stop_after,
                options,
                max(1, int(cpus_per_job)),
                offers,
                keep_stale,
            )

            def start(job: Job, wait: bool) -> bool:
                """Submit or skip `job`; False when another process holds its lock and `wait` is off."""
                if done := driver.reusable(job):
                    summaries[job.id] = done
                    progress.skipped(job, done)
                elif driver.claim(job, wait):
                    if done := driver.reusable(job):  # re-read under the lock: finished meanwhile?
                        driver.release(job)
                        summaries[job.id] = done
                        progress.skipped(job, done)
                    else:
                        set_aside_stale(job, driver.jobdir(job))
                        driver.submit(job)
                else:
                    return False
                link_into_suite(store, suite, job.id)
                return True

            held_elsewhere = [job for job in jobs if not start(job, wait=False)]
            while driver.pending or held_elsewhere:
                if not driver.pending:  # only jobs other processes train are left: wait for them
                    job = held_elsewhere.pop(0)
                    log.info("job %s: another fedbench process is training it; waiting for it to finish", job.id)
                    start(job, wait=True)
                    continue
                ready, _ = ray.wait(list(driver.pending), num_returns=1, timeout=POLL_S)
                driver.drain()  # after the wait: a finished task's messages are all in the queue
                for ref in ready:
                    if over := driver.collect(ref):
                        job, summaries[job.id] = over
                        driver.release(job)
                        progress.job_finished(job, summaries[job.id])
    except BaseException:  # UserError, Ctrl-C: stop what is queued; finished jobs and checkpoints stay
        if driver is not None:
            driver.cancel_all()
        raise
    finally:
        if driver is not None:
            driver.release_all()
        if started_here:
            ray.shutdown()
    return {job.id: summaries[job.id] for job in jobs}


@EXECUTORS.register
class RayExecutor(Executor):
    """`--executor ray`: the jobs as Ray tasks, on this machine or the cluster of ClusterOptions.address."""

    name = "ray"
    uses_cluster_options = True

    def device(self, requested: str, jobs: list[Job] = ()) -> str:  # the workers' devices matter, not the driver's
        return ("cuda" if self.options.gpus_per_job > 0 else "cpu") if requested == "auto" else requested

    def data_uris(self, jobs: list[Job]) -> dict:
        return parse_uri_options(self.options.data_uris, sorted({job.config.dataset.name for job in jobs}))

    def check(self, jobs: list[Job]) -> None:
        """The URIs, and the local executor's preflight (every split drawn) for the datasets this driver
        has: a job asking for more clients than the users is refused before any task starts. A dataset
        only the nodes have (their own copy or a --data-uri) is checked where it is loaded."""
        self.data_uris(jobs)
        super().check([job for job in jobs if _driver_has(job)])

    def run(self, jobs, suite, store, device, tracker, progress, stop_after):
        o = self.options
        return run_jobs_ray(
            jobs,
            suite,
            store,
            device,
            tracker,
            progress,
            stop_after,
            address=o.address,
            gpus_per_job=o.gpus_per_job,
            cpus_per_job=o.cpus_per_job,
            data_uris=self.data_uris(jobs),
            ship_max_mb=o.ship_max_mb,
            keep_stale=self.keep_stale,
        )


def _config_json(job: Job, suite: str) -> dict:
    from benchmark.run.job_runner import job_config_json  # the engine: imported once a job is submitted

    return job_config_json(job, suite)


def _driver_has(job: Job) -> bool:
    """The job's dataset is generated from its params or found under this machine's data root."""
    from benchmark.data.source import DATASETS, data_root

    probe = DATASETS.require(job.config.dataset.name).probe
    if probe is None:
        return True
    try:
        probe(data_root(job.config.dataset.root))
    except DatasetMissing:
        return False
    return True
