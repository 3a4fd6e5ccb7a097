"""The worker side of the Ray executor: what runs on a node, and how the code gets there.

A task runs its job with the local executor's code in a scratch folder on its node, reports
through a queue (`Relay`) and returns the job's files; nothing is written outside the scratch
folder (and the node's staged datasets, staging.py), so the nodes need no filesystem shared with
the driver.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import benchmark
from benchmark.data.uri import fetch
from benchmark.engine.round_tally import ClientsDone
from benchmark.errors import DatasetMissing, UserError
from benchmark.run.callbacks import RoundCallback
from benchmark.run.executor import run_or_record_failure
from benchmark.run.staging import Offer, node_fixes, on_node
from benchmark.store.job_dir import OUTPUT_FILES, RESUME_FILES, JobDir
from benchmark.store.layout import Store
from benchmark.store.records import FailedSummary, JobSummary, RoundRecord
from benchmark.suite.expand import Job

RELAY_EVERY_S = 0.5  # a worker sends its round records at most this often (each send is an actor call)
RELAY_CLIENTS_S = 5.0  # ... and how far its round has come at most this often (the driver logs a line a minute)


def code_runtime_env() -> dict:
    """Ship the fedbench code this driver runs (installed package or working tree) and the plugin
    modules it imported (their files or package folders, named in $FEDBENCH_PLUGINS, which the
    workers' first registry read imports) to the workers. Ray uploads local folders only for a
    whole Ray job: pass it to `ray.init(runtime_env=...)`."""
    import leaf_data
    from benchmark import plugins

    folders = [str(Path(module.__file__).parent) for module in (benchmark, leaf_data)]
    env = {"py_modules": folders + plugins.sources(), "excludes": ["__pycache__", "*.pyc"]}
    if plugins.imported():
        env["env_vars"] = {plugins.ENV: ",".join(plugins.imported())}
    return env


class Relay(RoundCallback):
    """Worker -> driver messages through the queue; round records are batched for RELAY_EVERY_S.
    A callback of the job (each evaluated round), and also a tracker (start_job / log_records), so the
    driver mirrors to MLflow what run_job logs."""

    def __init__(self, queue, job_id: str):
        self.queue, self.job_id = queue, job_id
        self.rounds: list[tuple[dict, float]] = []
        self.sent = time.monotonic()
        self.upto = 0  # the last round relayed
        self.clients_sent = 0.0  # when how far a round had come was last sent

    def send(self, kind: str, payload) -> None:
        self.flush_rounds()
        self.queue.put((kind, self.job_id, payload))

    def flush_rounds(self) -> None:
        if self.rounds:
            rounds, self.rounds = self.rounds, []
            self.queue.put(("rounds", self.job_id, rounds))
        self.sent = time.monotonic()

    def on_eval(self, rec: RoundRecord) -> None:
        self.rounds.append((rec.to_json(), time.time()))  # records cross to the driver in their JSON form
        self.upto = rec.round
        if time.monotonic() - self.sent >= RELAY_EVERY_S:
            self.flush_rounds()

    def on_clients(self, done: ClientsDone) -> None:
        """(On the job runner's thread for these counts, run/feed.py: sent alone, the batched rounds are the
        main thread's.)"""
        now = time.monotonic()
        if now - self.clients_sent >= RELAY_CLIENTS_S:
            self.clients_sent = now
            self.queue.put(("clients", self.job_id, done))

    # tracker interface: the start, and the records a resumed job starts from (run_job's later
    # batches repeat rounds on_eval relayed already)
    def start_job(self, job, config: dict) -> None:
        self.send("start", config)

    def log_records(self, records: list[RoundRecord], job_id: str | None = None) -> None:
        if new := [r for r in records if r.round > self.upto]:
            self.upto = new[-1].round
            self.send("records", [r.to_json() for r in new])

    def end_job(self, summary: JobSummary | FailedSummary, files) -> None: ...  # the task's result carries the end


def download(offer: Offer, dest: Path) -> None:
    """The offer's payload into `dest`: fetched from its URI, or read from Ray's object store."""
    if offer.uri is not None:
        fetch(offer.uri, dest)
    else:
        import ray

        dest.write_bytes(ray.get(offer.ref))


def run_remote_job(
    job: Job,
    suite: str,
    device: str,
    stop_after: int | None,
    threads: int,
    resume: dict[str, bytes],
    queue,
    offer: Offer | None = None,
) -> dict:
    """Body of a Ray task: {"summary", "files"}, or {"user_error": message naming the node}.
    `offer`: how to stage the job's dataset if this node lacks it."""
    import ray

    from benchmark.run.threads import request

    request(threads, "ray --cpus-per-job")
    node = ray.get_runtime_context().get_node_id()
    where = f"node {ray.util.get_node_ip_address()} {node[:8]} pid {os.getpid()}"
    relay = Relay(queue, job.id)
    relay.send("where", {"where": where, "code": str(Path(benchmark.__file__).parent)})
    scratch = Path(tempfile.mkdtemp(prefix=f"fedbench-{job.id}-"))
    try:
        job, staged = on_node(job, offer, download)
        if staged:
            relay.send("staged", staged)
        # a scratch store on the node: the driver's results folder is on another machine; its files go back as bytes
        jobdir = JobDir(Store(scratch), job.id)
        jobdir.write_files(resume)
        summary = run_or_record_failure(
            job,
            suite,
            jobdir,
            device,
            relay,
            stop_after=stop_after,
            on_checkpoint=lambda r: relay.send("checkpoint", jobdir.read_files(RESUME_FILES)),
            callbacks=[relay],
            on_clients=relay.on_clients,
        )
        relay.flush_rounds()
        return {"summary": summary.to_json(), "files": jobdir.read_files(OUTPUT_FILES)}
    except DatasetMissing as err:
        return {
            "user_error": f"on {where}: {err}\n  Each Ray node reads datasets from its own disk or a staged copy: "
            f"{node_fixes(job.config.dataset.name)}"
        }
    except UserError as err:
        return {"user_error": f"on {where}: {err}"}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
