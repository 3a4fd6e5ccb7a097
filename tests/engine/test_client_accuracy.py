"""Per-client accuracy at the last round (natural users): the percentiles and mean computed by
hand, the per-user counts of one evaluation pass, a job's client_acc.json and summary agreeing
with its pooled accuracy, and the same file and summary for a job resumed at its last round."""

from __future__ import annotations

import json
import math

import pytest
import torch
from fedtest import tiny_suite, write_suite

from benchmark.cli import main
from benchmark.engine.fed_data import as_is
from benchmark.engine.local import evaluate, evaluate_by_group
from benchmark.engine.setup import build_simulation
from benchmark.metrics import client_spread
from benchmark.run.callbacks import save_checkpoint
from benchmark.run.executor import run_jobs
from benchmark.run.job_runner import resume_point
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs


def test_client_spread_by_hand():
    # sorted 10, 20, 30, 40, 50: p10 lies 0.4 of the way from 10 to 20, p90 0.6 from 40 to 50
    spread = client_spread([30.0, 10.0, 50.0, 20.0, 40.0])
    assert spread == {"p10": 14.0, "p25": 20.0, "p50": 30.0, "p75": 40.0, "p90": 46.0, "mean": 30.0, "clients": 5}


def test_evaluation_groups_the_test_examples_by_user_in_one_pass():
    logits = torch.tensor([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 2.0]])
    y = torch.tensor([0, 0, 0, 1, 1, 1])  # hits: 1 0 1 1 0 1
    users = torch.tensor([0, 0, 2, 2, 2, 0])  # user 0 (rows 0, 1, 5) and user 2 hit 2 of 3; user 1 has none
    forward = lambda theta, x: x  # noqa: E731  the inputs are the logits
    theta = torch.zeros(1)
    acc, loss, per_user = evaluate_by_group(forward, theta, logits, y, as_is, users, batch_size=4)  # two batches
    assert (acc, loss) == evaluate(forward, theta, logits, y, as_is, batch_size=4)
    assert acc == 100 * 4 / 6
    assert per_user[0] == 100 * 2 / 3 and math.isnan(per_user[1]) and per_user[2] == 100 * 2 / 3
    assert evaluate_by_group(forward, theta, logits, y, as_is, None)[2] is None


def test_the_per_user_pass_runs_without_autograd_as_the_pooled_one_does():
    """Called directly (the last round's per-user pass), not through `evaluate`: in grad mode the
    Shakespeare LSTM's evaluation took 1.5x the pooled one (benchmarks/README.md, eval_speed.py)."""
    grad_enabled = []

    def forward(theta, x):
        grad_enabled.append(torch.is_grad_enabled())
        return x

    logits, y, users = torch.eye(3), torch.tensor([0, 1, 2]), torch.tensor([0, 1, 1])
    evaluate_by_group(forward, torch.zeros(1), logits, y, as_is, users)
    evaluate(forward, torch.zeros(1), logits, y, as_is)
    assert grad_enabled == [False, False]


def test_a_natural_split_job_records_each_clients_accuracy_at_its_last_round(tmp_path):
    suite = write_suite(tmp_path, tiny_suite(methods=["fedavg"]))
    results = tmp_path / "results"
    assert main(["run", str(suite), "--results-dir", str(results), "--no-tracking"]) == 0
    (job,) = load_jobs(suite)[1]
    folder = results / "tiny" / job.id
    summary = json.loads((folder / "summary.json").read_text())
    recorded = json.loads((folder / "client_acc.json").read_text())
    assert recorded["round"] == 4 and len(recorded["accuracy"]) == 6  # every user of the test set
    assert summary["client_acc"] == client_spread(list(recorded["accuracy"].values()))
    # each user's accuracy weighted by its test examples is the pooled accuracy of the same round
    from benchmark.data.source import load_dataset

    src = load_dataset("synthetic", job.config.dataset.params, None)
    sizes = torch.bincount(src.test_users).tolist()
    weighted = sum(a * n for a, n in zip(recorded["accuracy"].values(), sizes)) / sum(sizes)
    assert math.isclose(weighted, summary["final_acc"], rel_tol=1e-12)


def checkpoint_at_the_last_round(job, jobdir: JobDir) -> None:
    """What a process killed after its last round leaves had it checkpointed there: the job resumed
    from its checkpoint at the round before, its last round trained and evaluated, metrics.jsonl and
    checkpoint.pt written, no summary of it."""
    sim = build_simulation(job.config, "cpu", jobdir.path / "client_state")
    records = [r.to_json() for r in resume_point(job, jobdir, sim)]
    records += sim.run()
    jobdir.write_metrics(records)
    save_checkpoint(jobdir, sim)
    jobdir.summary.unlink()


# what two equal runs may differ in: when and where they ran, and that one was resumed
CIRCUMSTANTIAL = ("wall_time_s", "environment", "threads", "code_fingerprint")


@pytest.mark.parametrize("at", ["round before the last", "last round"])
def test_a_job_resumed_at_its_last_round_writes_what_a_straight_run_does(tmp_path, at):
    suite, jobs = load_jobs(write_suite(tmp_path, tiny_suite(methods=["fedavg"])))
    (job,) = jobs
    run_jobs(jobs, suite.name, Store(tmp_path / "straight"))
    resumed = JobDir(Store(tmp_path / "resumed"), job.id)
    run_jobs(jobs, suite.name, Store(tmp_path / "resumed"), stop_after=job.config.rounds - 1)
    assert resumed.checkpoint.exists() and not resumed.client_accuracy.exists()
    if at == "last round":
        checkpoint_at_the_last_round(job, resumed)
        assert resumed.load_checkpoint()["simulation"]["round"] == job.config.rounds
    run_jobs(jobs, suite.name, Store(tmp_path / "resumed"))
    straight = JobDir(Store(tmp_path / "straight"), job.id)
    assert resumed.client_accuracy.read_text() == straight.client_accuracy.read_text()
    # resumed at the last round, the process trained no round: it has no local step to describe
    ignored = CIRCUMSTANTIAL + (("local_step",) if at == "last round" else ())
    a, b = ({k: v for k, v in d.read_summary().to_json().items() if k not in ignored} for d in (straight, resumed))
    assert b == a and b["client_acc"]["clients"] == 6
