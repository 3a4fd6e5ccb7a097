"""summary.json read back typed (store/records.py `summary_from_json`, `JobDir.read_summary`): the summaries of
the frozen fixture (schema 1, before the store), of a newer fedbench, of a diverged, failed or cut-down job
all read with their values as attributes and lose nothing when written again (metrics.jsonl's records and
client_acc.json too); what a run hands back in memory is the same typed summary, marked when it was reused."""

from __future__ import annotations

import json
from dataclasses import replace

from fedtest import tiny_suite, write_suite
from pinned import FROZEN

from benchmark.cli import main
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.store.records import FailedSummary, JobSummary, measured, summary_from_json
from benchmark.suite.expand import load_jobs

FROZEN_JOBS = sorted(p for p in (FROZEN / "results" / "frozen").iterdir() if (p / "summary.json").exists())

NEWER = """{
  "job_id": "0123456789ab", "suite": "s", "dataset": "synthetic", "method": "FedAvg", "seed": 1,
  "data_fingerprint": "ab", "bytes_down": 10, "bytes_up": 20, "status": "finished", "rounds_completed": 4,
  "final_acc": 50.0, "metrics": {"acc@4": 50.0}, "schema": 3, "energy_joules": 12.5
}"""
DIVERGED = """{
  "job_id": "0123456789ab", "suite": "s", "dataset": "synthetic", "method": "FedAvg", "seed": 0,
  "data_fingerprint": "ab", "bytes_down": 10, "bytes_up": 20, "status": "diverged", "rounds_completed": 2,
  "diverged_at_round": 3, "error": "non-finite loss", "last_finite": {"round": 2, "test_acc": 40.0}, "schema": 2
}"""
FAILED = """{
  "job_id": "0123456789ab", "suite": "s", "dataset": "synthetic", "method": "FedAvg", "seed": 0,
  "status": "failed", "error": "ValueError: bad", "traceback": "Traceback ...", "schema": 2
}"""


def read(tmp_path, text: str):
    jobdir = JobDir.at(tmp_path / "0123456789ab")
    jobdir.path.mkdir(exist_ok=True)
    jobdir.summary.write_text(text)
    return jobdir.read_summary()


def test_the_frozen_summaries_of_the_layout_before_the_store_read_typed_and_lose_nothing():
    assert FROZEN_JOBS
    for folder in FROZEN_JOBS:
        on_disk = json.loads((folder / "summary.json").read_text())
        summary = JobDir.at(folder).read_summary()
        assert isinstance(summary, JobSummary) and summary.schema == 1 and summary.extra == {}
        assert (summary.job_id, summary.status, summary.rounds_completed) == (
            folder.name,
            on_disk["status"],
            on_disk["rounds_completed"],
        )
        assert summary.final_acc == on_disk.get("final_acc") and summary.metrics == on_disk.get("metrics", {})
        rewritten = summary.to_json()
        assert {k: rewritten[k] for k in on_disk} == on_disk
        assert all(rewritten[k] is None for k in rewritten.keys() - on_disk.keys() - {"schema"})


def test_a_newer_fedbench_summary_keeps_its_unknown_fields_when_written_again(tmp_path):
    summary = read(tmp_path, NEWER)
    assert summary.schema == 3 and summary.extra == {"energy_joules": 12.5}
    assert summary.final_acc == 50.0 and summary.metrics == {"acc@4": 50.0} and summary.final_subopt is None
    assert summary.to_json()["energy_joules"] == 12.5 and not hasattr(summary, "energy_joules")


def test_a_diverged_summary_reads_its_divergence_and_writes_it_back_the_same(tmp_path):
    summary = read(tmp_path, DIVERGED)
    assert summary.diverged.at_round == 3 and summary.error == "non-finite loss"
    assert summary.diverged.last_finite == {"round": 2, "test_acc": 40.0} and summary.extra == {}
    on_disk = json.loads(DIVERGED)
    assert {k: v for k, v in summary.to_json().items() if k in on_disk} == on_disk


def test_a_failed_summary_reads_as_one_that_measured_nothing(tmp_path):
    summary = read(tmp_path, FAILED)
    assert isinstance(summary, FailedSummary) and summary.error == "ValueError: bad"
    assert measured(summary).final_acc is None and measured(summary).metrics == {}
    unset = {"code_fingerprint": None, "code_parts": None, "code_versions": None}  # what this one did not record
    assert summary.to_json() == {**json.loads(FAILED), **unset}


def test_a_cut_down_or_damaged_summary_reads_as_the_keys_it_has(tmp_path):
    summary = read(tmp_path, '{"status": "finished"}')
    assert summary.status == "finished" and summary.rounds_completed is None and summary.schema == 1
    assert summary.final_acc is None and summary.metrics == {} and summary.extra == {}
    assert {k: v for k, v in summary.to_json().items() if v not in (None, {})} == {"status": "finished", "schema": 1}
    assert read(tmp_path, "[1, 2]") is None and read(tmp_path, '{"status": "fin') is None
    assert summary_from_json({"job_id": "x", "status": "stopped", "stale": ["model"]}).extra == {"stale": ["model"]}


def test_metrics_records_read_typed_from_any_writer_and_written_back_as_the_file(tmp_path):
    jobdir = JobDir.at(tmp_path / "0123456789ab")
    jobdir.path.mkdir()
    lines = [
        '{"round": 1, "test_acc": 40.0, "test_loss": 1.1, "train_loss": 1.2, "ema_acc": 40.0, "bytes_down": 8, '
        '"bytes_up": 8, "time": 1700000000.5, "grad_norm": 0.3}',
        '{"round": 2, "test_acc": 45.0, "bytes_down": 16, "bytes_up": 16}',  # a writer that measured less
    ]
    jobdir.metrics.write_text("\n".join(lines) + "\n")
    first, second = jobdir.read_metrics()
    assert (first.round, first.test_acc, first.time, first.extra) == (1, 40.0, 1700000000.5, {"grad_norm": 0.3})
    assert first.to_json() == json.loads(lines[0])
    assert (second.round, second.test_loss, second.wall_s) == (2, None, None) and second.bytes_up == 16
    assert jobdir.last_record().round == 2
    with jobdir.metrics.open("a") as cut:  # a kill mid-line: where the job got to is the line before
        cut.write('{"round": 3, "test_')
    assert jobdir.last_record().round == 2 and jobdir.last_record().test_acc == 45.0


def test_a_run_reads_back_what_it_wrote(tmp_path):
    path = write_suite(tmp_path, tiny_suite(methods=["fedavg"]))
    results = tmp_path / "results"
    assert main(["run", str(path), "--results-dir", str(results), "--no-tracking", "-q"]) == 0
    (job,) = load_jobs(path)[1]
    jobdir = JobDir(Store(results), job.id)
    on_disk = json.loads(jobdir.summary.read_text())
    summary = jobdir.read_summary()
    assert summary.to_json() == on_disk and summary.schema == 2 and summary.extra == {}
    assert summary.final_acc == on_disk["final_acc"] and summary.status == "finished"
    assert jobdir.done_summary() is not None and jobdir.skipped_summary() == replace(summary, skipped=True)
    records = jobdir.read_metrics()
    assert [r.to_json() for r in records] == [json.loads(line) for line in jobdir.metrics.read_text().splitlines()]
    assert records[-1].round == summary.rounds_completed and records[-1].ema_acc == summary.final_ema_acc
    users = jobdir.read_client_accuracy()  # natural-user data: each user's accuracy at the last round
    assert users.to_json() == json.loads(jobdir.client_accuracy.read_text()) and users.round == summary.rounds_completed
    assert (
        summary.client_acc["clients"] == len(users.accuracy)
        and JobDir(Store(results), "0" * 12).read_client_accuracy() is None
    )
