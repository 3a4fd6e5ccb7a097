"""A job whose loss or parameters become non-finite stops as `diverged`, with no accuracy anywhere."""

from __future__ import annotations

import json
import math

import pytest
import torch
from fedtest import job_config, tiny_simulation, tiny_suite, write_suite

from benchmark.cli import main
from benchmark.engine.simulation import Diverged
from benchmark.errors import UserError
from benchmark.report.check import write_baseline
from benchmark.store.job_dir import JobDir
from benchmark.store.job_status import methods_all_diverged
from benchmark.store.layout import Store
from benchmark.store.records import summary_from_json
from benchmark.suite.expand import load_jobs

BLOWS_UP_AT_ROUND_6 = 1e4  # logistic on the tiny synthetic data, no clipping: logits overflow in round 6


def sweep_suite(lrs: list[float]) -> dict:
    suite = tiny_suite(methods=["fedavg"], grid={"local.lr": lrs})
    suite["defaults"].update(rounds=8)
    suite["defaults"]["local"].update(clip_norm=None)
    return suite


def strict_json_lines(path) -> list[dict]:
    def no_constants(name):
        raise AssertionError(f"{path} holds a bare {name}")

    return [json.loads(line, parse_constant=no_constants) for line in path.read_text().splitlines()]


def test_non_finite_parameters_stop_the_simulation_in_that_round():
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    sim = tiny_simulation(job_config(rounds=3), x, torch.tensor([0, 1]), [[0], [1]], 2)
    sim.progress.theta[0] = float("inf")  # as if round 0's update had overflowed
    with pytest.raises(Diverged) as err:
        sim.run()
    assert err.value.round == 1 and sim.progress.round == 1


def test_diverged_job_records_round_and_last_finite_metrics_and_no_accuracy(tmp_path, capsys):
    path = write_suite(tmp_path, sweep_suite([0.05, BLOWS_UP_AT_ROUND_6]))
    assert main(["run", str(path), "--no-tracking", "--results-dir", str(tmp_path / "r")]) == 0  # a sweep edge: exit 0
    out = capsys.readouterr()
    suite, jobs = load_jobs(path)
    good, bad = (JobDir(Store(tmp_path / "r"), j.id) for j in jobs)
    s = bad.read_summary()
    assert s.status == "diverged" and s.diverged.at_round == 6 and s.rounds_completed == 5
    assert s.final_acc is None and s.metrics == {}
    records = strict_json_lines(bad.metrics)
    assert [r["round"] for r in records] == [1, 2, 3, 4, 5] and s.diverged.last_finite == records[-1]
    assert all(math.isfinite(r["test_loss"]) for r in records)
    assert not bad.model.exists() and not bad.checkpoint.exists()
    assert good.read_summary().status == "finished"
    row = next(line for line in out.out.splitlines() if "10000" in line)
    cells = [c.strip() for c in row.split("│")[1:-1]]  # the sensitivity table's row of lr 1e4
    assert cells[2:4] == ["0/1", "diverged@6"] and "%" not in row
    assert set(cells[4:]) == {"diverged (1/1)"}  # every number: acc@2, rounds/MB to 30%, final acc, time
    assert "1 job(s) diverged" in out.err
    # terminal: a rerun skips it instead of training it again
    mtime = bad.summary.stat().st_mtime_ns
    assert main(["run", str(path), "--no-tracking", "--results-dir", str(tmp_path / "r")]) == 0
    assert bad.summary.stat().st_mtime_ns == mtime


def test_every_job_of_a_method_diverged_exits_1(tmp_path, capsys):
    path = write_suite(tmp_path, sweep_suite([BLOWS_UP_AT_ROUND_6, 1e6]))
    assert main(["run", str(path), "--no-tracking", "--results-dir", str(tmp_path / "r")]) == 1
    assert "every job diverged for: synthetic / FedAvg" in capsys.readouterr().err


def test_diverged_jobs_never_enter_baselines(tmp_path):
    finished = {"status": "finished", "dataset": "d", "method": "m", "seed": 0, "final_acc": 50.0, "metrics": {}}
    diverged = {**finished, "seed": 1, "status": "diverged", "diverged_at_round": 3, "final_acc": None}
    finished, diverged = summary_from_json(finished), summary_from_json(diverged)  # as a run hands them back
    with pytest.raises(UserError, match="not writing a baseline from jobs that did not finish: d / m / seed 1"):
        write_baseline(tmp_path / "b.json", [finished, diverged])
    assert not (tmp_path / "b.json").exists()
    assert methods_all_diverged([("m", diverged), ("m", finished), ("n", diverged)]) == ["n"]
