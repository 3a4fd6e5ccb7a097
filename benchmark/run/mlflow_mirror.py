"""One job's MLflow child run mirrored from its results folder: the one idempotent function
(`JobMirror.mirror`) that live logging, the healing at every `fedbench run` and `fedbench sync`
all go through. results/ is the source of truth; calling `mirror` again changes nothing once the
run matches the folder.

A run is named `<method and settings> · <dataset> · s<seed> · <job id>` (the method first, so
names that MLflow's table truncates still differ where they matter) and carries:
- tags: `fedbench.*` labels, MLflow's standard `mlflow.source.name` / `.type` / `.git.commit` and
  `mlflow.user`, the environment of the process that ran it (from summary.json: `fedbench.version.*`,
  `fedbench.git_dirty`, `fedbench.host`, `fedbench.env.*`: one tag per fact, environment_tags), the
  fingerprint of each part's code and the versions of the distributions they come from
  (`fedbench.code.*`, `fedbench.version.*`);
- params: the resolved job config, dotted (`method.client.prox.mu`), lists of plain values as
  `a, b, c`, unset values left out;
- its dataset as an MLflow input (name = the dataset label, digest = the data fingerprint);
- metrics: every evaluated round (step = round, timestamp = when it was measured), then the
  summary's numbers (`summary.acc_at_60`, `final_acc`, ...; names by `metric_key`) and, for a job
  evaluated per user (LEAF-style natural splits), the spread of its users' accuracy at the last
  round (`client_acc.p10` ... `client_acc.p90`, `client_acc.mean`, `client_acc.clients`);
- artifacts: config.json, metrics.jsonl, client_acc.json (each user's accuracy, where the job has
  it), summary.json and, where the job's `log_model` setting asks, `model/final_model.pt` (the state_dict fedbench saved: loads with `torch.load(...,
  weights_only=True)` into the model the config names; an artifact, not `mlflow.pytorch.log_model`,
  which would pickle the module with its code and infer a pip environment on every job).
"""

from __future__ import annotations

import getpass
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from benchmark.round_values import logged
from benchmark.store.job_status import DIVERGED, FAILED, FINISHED, STOPPED
from benchmark.store.records import FailedSummary, JobSummary, RoundRecord, measured
from benchmark.suite.dotted import flatten

# summary.json fields logged as run metrics (a failed or diverged job has no final_acc: nothing is logged)
SUMMARY_METRICS = ("final_acc", "final_ema_acc", "final_subopt", "final_val_ema_acc", "wall_time_s", "rounds_completed")
# job status -> MLflow run status (the exact one is the run's `fedbench.status` tag)
RUN_STATUS = {FINISHED: "FINISHED", STOPPED: "KILLED", DIVERGED: "FAILED", FAILED: "FAILED"}
MODEL_ARTIFACT_DIR = "model"  # a run's final_model.pt, where the job's log_model setting asks for it


def metric_key(name: str) -> str:
    """A metric name in MLflow's alphabet (letters, digits, `_ - . / ` and space): `@` reads `_at_`
    (`acc@60` -> `acc_at_60`), any other character outside it becomes `_`."""
    return re.sub(r"[^A-Za-z0-9_\-./ ]", "_", name.replace("@", "_at_"))


def job_tags(job, suite: str) -> dict[str, str]:
    c = job.config
    return {
        "fedbench.kind": "job",
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
    """`FedACG lam=0.9 local.lr=0.1 · synthetic · s0 · 3f2a91`: method and settings first."""
    setting = job.setting_label.replace("[", " ").replace("]", "")
    return f"{setting} · {job.dataset_label} · s{job.config.seed} · {job.id[:6]}"


def source_tags(source: str | None) -> dict[str, str]:
    """MLflow's standard tags of who ran what (its UI's Source and User columns)."""
    tags = {"mlflow.user": getpass.getuser(), "mlflow.source.type": "LOCAL"}
    if source:
        tags["mlflow.source.name"] = source
    return tags


# environment keys that a run's provenance tags also carry: one tag per fact, the job's own value winning
# on its run (a Ray worker may run other versions than the driver); every other key is fedbench.env.<key>
ENVIRONMENT_TAG = {
    "git_commit": "mlflow.source.git.commit",
    "git_dirty": "fedbench.git_dirty",
    "host": "fedbench.host",
    **{package: f"fedbench.version.{package}" for package in ("python", "fedbench", "torch", "mlflow", "numpy")},
}


def tag_value(value) -> str:
    """A tag's text: booleans as `true` / `false` (the same spelling wherever they come from)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def environment_tags(environment: dict | None) -> dict[str, str]:
    """summary.json's `environment` record as tags: versions, git and host under ENVIRONMENT_TAG's keys,
    the rest (device, device_name, threads, cuda, cudnn, determinism flags) as `fedbench.env.<key>`."""
    return {
        ENVIRONMENT_TAG.get(k, f"fedbench.env.{k}"): tag_value(v)
        for k, v in (environment or {}).items()
        if v is not None
    }


def code_tags(summary: JobSummary | FailedSummary) -> dict[str, str]:
    """The code that produced the job (summary.json's `code_parts` and `code_versions`):
    `fedbench.code.<part>` (`fedbench.code.server.acg`) and `fedbench.version.<distribution>` tags."""
    parts = {f"fedbench.code.{metric_key(k.replace(' ', '.'))}": v for k, v in (summary.code_parts or {}).items()}
    versions = {f"fedbench.version.{metric_key(k)}": v for k, v in (summary.code_versions or {}).items()}
    return {k: str(v) for k, v in {**parts, **versions}.items()}


def client_acc_metrics(summary: JobSummary | FailedSummary) -> dict[str, float]:
    """summary.json's `client_acc` (p10 ... p90, mean, clients) as `client_acc.<key>` metrics."""
    return {metric_key(f"client_acc.{k}"): v for k, v in (measured(summary).client_acc or {}).items()}


@dataclass
class JobMirror:
    """The mirror of one suite's jobs in one MLflow experiment, under its parent run."""

    client: object  # MlflowClient
    experiment_id: str
    parent_id: str
    suite: str
    provenance: dict  # tags of this process's code (git commit, package versions) and source

    def find(self, job_id: str):
        """The job's child run (the oldest, should two processes have raced), or None."""
        runs = self.client.search_runs(
            [self.experiment_id],
            f"tags.`fedbench.job_id` = '{job_id}'",
            max_results=1,
            order_by=["attributes.start_time ASC"],
        )
        return runs[0] if runs else None

    def create(self, job, config: dict) -> str:
        """A new run for the job (name, tags, params): two writes, the tags going with the run."""
        from mlflow.entities import Param

        run_id = self.client.create_run(
            self.experiment_id, run_name=job_run_name(job), tags=self.run_tags(job)
        ).info.run_id
        self.client.log_batch(run_id, params=[Param(k, v) for k, v in run_params(config).items()])
        return run_id

    def run_tags(self, job) -> dict[str, str]:
        """The tags a job's run is created with: its parent, labels and this process's provenance."""
        return {"mlflow.parentRunId": self.parent_id, **job_tags(job, self.suite), **self.provenance}

    def logged_upto(self, run_id: str) -> int:
        """The last round the run has (0: none)."""
        return max((m.step for m in self.client.get_metric_history(run_id, "test_acc")), default=0)

    def log_rounds(self, run_id: str, records: list[RoundRecord], after: int) -> int:
        """Log the records past round `after` (one log_batch; MLflow splits it at its limits); returns
        the last round the run now has."""
        new = [r for r in records if r.round > after]
        self.client.log_batch(run_id, metrics=round_metrics(new))
        return new[-1].round if new else after

    def finish(
        self, run_id: str, summary: JobSummary | FailedSummary, files: list[Path], model: Path | None = None
    ) -> None:
        """The summary's dataset, files and the final `model` (a finished job's, where given), then its
        numbers, environment, code and status tags in one log_batch, then the run's end status. The status
        tag and the end status come last, so a run that has both (`is_complete`) has everything before."""
        from mlflow.entities import RunTag

        self.log_dataset(run_id, summary)
        for f, artifact_path in artifacts(summary, files, model):
            self.client.log_artifact(run_id, str(f), artifact_path)
        tags = final_tags(summary)  # the status tag last: MLflow writes a batch's metrics before its tags, in order
        self.client.log_batch(run_id, metrics=final_metrics(summary), tags=[RunTag(k, v) for k, v in tags.items()])
        self.client.set_terminated(run_id, RUN_STATUS.get(summary.status, "FAILED"))

    def log_dataset(self, run_id: str, summary: JobSummary | FailedSummary) -> None:
        from mlflow.entities import DatasetInput

        if dataset := dataset_of(summary):
            self.client.log_inputs(run_id, datasets=[DatasetInput(dataset)])

    def new_run(self, job, jobdir, summary: JobSummary | FailedSummary, files: list[Path] | None = None):
        """Everything a finished job's run holds, for writing it at once (mlflow_batch.py): what `mirror`
        writes call by call into a new run."""
        from benchmark.run.mlflow_batch import NewRun

        config = job_config(job, jobdir)
        model = jobdir.model if config.get("log_model") else None
        return NewRun(
            job_id=job.id,
            name=job_run_name(job),
            tags=self.run_tags(job) | final_tags(summary),
            params=run_params(config),
            metrics=round_metrics(jobdir.read_metrics()) + final_metrics(summary),
            dataset=dataset_of(summary),
            artifacts=artifacts(summary, files if files is not None else jobdir.mirrored_files, model),
            status=RUN_STATUS.get(summary.status, "FAILED"),
        )

    @staticmethod
    def is_complete(run, summary: JobSummary | FailedSummary) -> bool:
        """A run that already mirrors a terminal summary: its status tag and end status match, and
        it has the summary's per-user spread (runs mirrored before it was logged lack it)."""
        status = summary.status
        return (
            run.data.tags.get("fedbench.status") == status
            and run.info.status == RUN_STATUS.get(status)
            and client_acc_metrics(summary).keys() <= run.data.metrics.keys()
        )

    def mirror(
        self,
        job,
        jobdir,
        summary: JobSummary | FailedSummary | None = None,
        files: list[Path] | None = None,
        live: tuple | None = None,
    ) -> str:
        """Bring the job's run up to its folder: the run (created if missing), the rounds it lacks,
        and once the job has a summary its final numbers and status. Idempotent. `live`: (run id, last
        round logged) of a run this process holds open, so neither needs looking up."""
        summary = summary if summary is not None else jobdir.read_summary()
        config = job_config(job, jobdir)
        if live is not None:
            run_id, upto = live
        elif (run := self.find(job.id)) is None:
            run_id, upto = self.create(job, config), 0
        elif summary and self.is_complete(run, summary):
            return run.info.run_id
        else:
            run_id, upto = run.info.run_id, self.logged_upto(run.info.run_id)
        self.log_rounds(run_id, jobdir.read_metrics(), upto)
        if summary:
            self.finish(
                run_id,
                summary,
                files if files is not None else jobdir.mirrored_files,
                jobdir.model if config.get("log_model") else None,
            )
        return run_id


def round_metrics(records: list[RoundRecord]) -> list:
    """Each record's values that MLflow logs (round_values.logged: the built-in measured ones and any a plugin
    declared) as MLflow metrics (step = round, timestamp = when it was measured)."""
    from mlflow.entities import Metric

    now, names = time.time(), logged()
    return [
        Metric(k, float(value), int(1000 * (r.time if r.time is not None else now)), int(r.round))
        for r in records
        for k in names
        if (value := r.value(k)) is not None
    ]


def job_config(job, jobdir) -> dict:
    """The job's config.json (a job that failed before writing it: its id only)."""
    return json.loads(jobdir.config.read_text()) if jobdir.config.exists() else {"job_id": job.id}


def run_params(config: dict) -> dict[str, str]:
    """A job's config as its run's params (keys cut to MLflow's 250 characters)."""
    return {k[:250]: v for k, v in flatten(config).items()}


def final_metrics(summary: JobSummary | FailedSummary) -> list:
    """The summary's numbers as metrics at step 0 (a diverged or failed job has no accuracies)."""
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    ran = measured(summary)
    values = {
        **{f"summary.{metric_key(k)}": v for k, v in ran.metrics.items()},
        **client_acc_metrics(summary),
        **{k: getattr(ran, k) for k in SUMMARY_METRICS},
        "diverged_at_round": ran.diverged.at_round if ran.diverged else None,
    }
    return [
        Metric(k, float(v), now, 0)
        for k, v in values.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    ]


def final_tags(summary: JobSummary | FailedSummary) -> dict[str, str]:
    """The summary's environment, code and status as tags, the status last."""
    environment = measured(summary).environment
    return {**environment_tags(environment), **code_tags(summary), "fedbench.status": summary.status or "?"}


def dataset_of(summary: JobSummary | FailedSummary):
    """The data the job trained on as an MLflow Dataset (name = its label, digest = its fingerprint), or None."""
    from mlflow.entities import Dataset

    if not (fingerprint := measured(summary).data_fingerprint):
        return None
    return Dataset(
        name=str(summary.dataset or "data"),
        digest=str(fingerprint),
        source_type="local",
        source=json.dumps({"fedbench": "data_fingerprint of the tensors the job trained on"}),
    )


def artifacts(
    summary: JobSummary | FailedSummary, files: list[Path], model: Path | None
) -> list[tuple[Path, str | None]]:
    """(file, artifact folder) of the run: the job's files that exist, and a finished job's `model` where given."""
    out = [(f, None) for f in files if f.exists()]
    if model is not None and summary.status == FINISHED and model.exists():
        out.append((model, MODEL_ARTIFACT_DIR))
    return out
