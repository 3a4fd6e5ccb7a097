"""Ctrl-C / SIGTERM keep work and say how to resume; time-based checkpoints by default; the
markup, `name: ".."` and file-permission defects; dataset and resource checks before any job."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time

import pytest
from fedtest import REPO, tiny_suite, write_suite

from benchmark.cli import main
from benchmark.engine.simulation import Simulation
from benchmark.errors import UserError
from benchmark.run.ray_executor import check_resources
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs
from benchmark.suite.schema import Settings


def ctrl_c_in_round(monkeypatch, at: int) -> None:
    run_round = Simulation.run_round

    def interrupted(self, t, *listener):
        if t + 1 == at:
            raise KeyboardInterrupt
        return run_round(self, t, *listener)

    monkeypatch.setattr(Simulation, "run_round", interrupted)


def test_ctrl_c_says_what_was_kept_and_how_to_resume(tmp_path, monkeypatch, capsys):
    raw = tiny_suite(methods=["fedavg"])
    raw["defaults"].update(rounds=6, checkpoint_every=0, checkpoint_minutes=1e-9)  # time-based: every round here
    suite = write_suite(tmp_path, raw)
    ctrl_c_in_round(monkeypatch, 4)
    args = ["run", str(suite), "--no-tracking", "--results-dir", str(tmp_path / "r")]
    assert main(args) == 130
    _, (job,) = load_jobs(suite)
    err = capsys.readouterr().err
    assert f"job {job.id} stopped at round 3; its checkpoint there is kept" in err
    assert "resume with: fedbench run " + str(suite) in err
    assert JobDir(Store(tmp_path / "r"), job.id).load_checkpoint()["simulation"]["round"] == 3
    monkeypatch.undo()
    assert main(args) == 0
    assert JobDir(Store(tmp_path / "r"), job.id).read_summary().status == "finished"


def test_first_ctrl_c_stops_at_the_end_of_the_round_with_a_checkpoint(
    tmp_path, monkeypatch, capsys, caplog, ctrl_c_raises
):
    raw = tiny_suite(methods=["fedavg"])
    raw["defaults"].update(rounds=6, checkpoint_every=0, checkpoint_minutes=0)  # no scheduled checkpoint
    suite = write_suite(tmp_path, raw)
    run_round = Simulation.run_round

    def ctrl_c_during_round_2(self, t, *listener):
        if t == 1:
            os.kill(os.getpid(), signal.SIGINT)
        return run_round(self, t, *listener)

    monkeypatch.setattr(Simulation, "run_round", ctrl_c_during_round_2)
    assert main(["run", str(suite), "--no-tracking", "--results-dir", str(tmp_path / "r")]) == 130
    _, (job,) = load_jobs(suite)
    d = JobDir(Store(tmp_path / "r"), job.id)
    assert d.load_checkpoint()["simulation"]["round"] == 2 and [r.round for r in d.read_metrics()] == [1, 2]
    err = capsys.readouterr().err
    assert (
        "stopping when this round ends" in caplog.text
        and f"job {job.id} stopped at round 2; its checkpoint there is kept" in err
    )
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored


def test_time_based_checkpoints_are_on_by_default():
    assert Settings().checkpoint_minutes == 5


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signalled_process_keeps_its_checkpoint_and_closes_its_runs(tmp_path, sig):
    raw = tiny_suite(methods=["fedavg"])
    raw["defaults"].update(rounds=5000, checkpoint_minutes=0.002)
    suite = write_suite(tmp_path, raw)
    _, (job,) = load_jobs(suite)
    jobdir = JobDir(Store(tmp_path / "r"), job.id)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmark.cli",
            "run",
            str(suite),
            "--results-dir",
            str(tmp_path / "r"),
            "--tracking-uri",
            f"sqlite:///{tmp_path / 'store.db'}",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a background runner ignores SIGINT
    )
    end = time.monotonic() + 120
    while not jobdir.checkpoint.exists():
        assert time.monotonic() < end
        time.sleep(0.1)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "its checkpoint there is kept" in err and "resume with" in err  # nothing lost
    import mlflow

    client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path / 'store.db'}")
    statuses = {
        r.data.tags["fedbench.kind"]: r.info.status
        for r in client.search_runs([client.get_experiment_by_name("tiny").experiment_id])
    }
    assert statuses == {"suite": "KILLED", "job": "KILLED"}


def test_markup_in_an_error_is_printed_as_text(tmp_path, capsys):
    assert main(["run", str(tmp_path / "[/bold]x.yaml"), "--no-tracking"]) == 2
    assert "[/bold]x.yaml" in capsys.readouterr().err


def test_grid_labels_keep_their_brackets_in_tables(tmp_path, capsys):
    suite = write_suite(tmp_path, tiny_suite(methods=[{"preset": "fedacg", "grid": {"server.lam": [0.8]}}]))
    assert main(["plan", str(suite)]) == 0
    assert "FedACG[lam=0.8]" in capsys.readouterr().out


@pytest.mark.parametrize("name", [".", ".."])
def test_a_suite_name_cannot_leave_the_results_folder(tmp_path, capsys, name):
    suite = write_suite(tmp_path, tiny_suite(name=name))
    assert main(["run", str(suite), "--no-tracking", "--results-dir", str(tmp_path / "r")]) == 2
    assert "name" in capsys.readouterr().err and not (tmp_path / "r").exists()


def test_result_files_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        suite = write_suite(tmp_path, tiny_suite(methods=["fedavg"]))
        assert main(["run", str(suite), "--no-tracking", "--results-dir", str(tmp_path / "r")]) == 0
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "r").rglob("*") if p.is_file() and ".locks" not in p.parts]
    # the synthetic data names each test example's user: the last round is also scored per user
    assert {p.name for p in files} == {
        "config.json",
        "metrics.jsonl",
        "summary.json",
        "final_model.pt",
        "client_acc.json",
    }
    assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o644}


def test_a_missing_dataset_stops_the_suite_before_its_first_job(tmp_path, capsys):
    raw = tiny_suite(methods=["fedavg"])
    raw["datasets"].append({"name": "femnist", "root": str(tmp_path / "nowhere"), "split": {"kind": "natural"}})
    assert main(["run", str(write_suite(tmp_path, raw)), "--no-tracking", "--results-dir", str(tmp_path / "r")]) == 2
    assert "femnist/data" in capsys.readouterr().err and not (tmp_path / "r").exists()


def test_resource_requests_the_cluster_cannot_meet_are_refused():
    with pytest.raises(UserError, match=r"--gpus-per-job 0.5: the Ray cluster has 0 GPU"):
        check_resources({"CPU": 2.0}, 0.5, 1.0)
    with pytest.raises(UserError, match=r"--cpus-per-job 4: the Ray cluster has 2 CPU"):
        check_resources({"CPU": 2.0}, 0.0, 4.0)
    check_resources({"CPU": 2.0, "GPU": 1.0}, 0.5, 2.0)
