"""`fedbench plan --budget`: exact client-steps and samples, and a measured step rate."""

from __future__ import annotations

import math

from benchmark.cli import main
from benchmark.engine.setup import federated_data
from benchmark.report.budget import budgets, client_cost, job_cost
from benchmark.suite.expand import load_jobs
from tests.fedtest import tiny_suite, write_suite


def test_one_client_costs_follow_the_batch_plan():
    class Local:
        epochs, steps, batch_size = 2, None, 8

    assert client_cost(20, Local) == (2 * 3, 40)  # ⌈20/8⌉ = 3 batches an epoch, every example once an epoch
    assert client_cost(5, Local) == (2 * 1, 10)  # b = min(B, n): one batch of 5
    Local.epochs, Local.steps = None, 3
    assert client_cost(20, Local) == (3, 24)  # K full batches of b


def test_fixed_steps_cost_is_clients_per_round_x_steps_x_rounds(tmp_path):
    raw = tiny_suite(methods=["fedavg"])
    raw["defaults"]["local"] = {"steps": 3, "batch_size": 8, "lr": 0.05}
    _, (job,) = load_jobs(write_suite(tmp_path, raw))
    assert min(len(c) for c in federated_data(job.config).clients) >= 8
    assert job_cost(job) == (4 * 3 * 3, 4 * 3 * 3 * 8)  # 4 rounds x 3 of 6 clients x 3 steps (x 8 samples)


def test_full_participation_epochs_cost_sums_every_client(tmp_path):
    raw = tiny_suite(methods=["fedavg"])
    raw["defaults"].update(participation={"rate": 1.0}, local={"epochs": 2, "batch_size": 8, "lr": 0.05})
    _, (job,) = load_jobs(write_suite(tmp_path, raw))
    sizes = [len(c) for c in federated_data(job.config).clients]
    steps = 4 * sum(2 * math.ceil(n / min(8, n)) for n in sizes)
    assert job_cost(job) == (steps, 4 * 2 * sum(sizes))


def test_budget_times_jobs_at_a_measured_rate(tmp_path, capsys):
    suite = write_suite(tmp_path, tiny_suite())
    _, jobs = load_jobs(suite)
    found = budgets(jobs, "cpu")
    assert all(0 < b.seconds_per_step < 1 and b.seconds == b.client_steps * b.seconds_per_step for b in found.values())
    assert main(["plan", str(suite), "--budget", "--device", "cpu"]) == 0
    shown = capsys.readouterr().out
    assert "compute budget of 2 jobs" in shown and "total" in shown
