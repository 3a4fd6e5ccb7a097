"""Data are checked when loaded (file named, exit 2 before any job) and fingerprinted, so results
computed on other data are never reused as finished."""

from __future__ import annotations

import json
import logging

import pytest
import torch
from data_fixtures import write_leaf
from fedtest import write_suite

from benchmark.cli import main
from benchmark.data.source import SourceData
from benchmark.engine.setup import forget_loaded_data
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store


def femnist_users(labels: list[int]) -> dict:
    return {"u0": {"x": [[0.5] * 784 for _ in labels], "y": labels}}


def femnist_suite(tmp_path, root, name: str = "leaf", extra_datasets: tuple = ()) -> dict:
    return write_suite(
        tmp_path,
        {
            "name": name,
            "defaults": {
                "rounds": 2,
                "num_clients": 1,
                "participation": {"rate": 1.0},
                "local": {"steps": 1, "batch_size": 2},
                "model": {"name": "femnist_cnn"},
            },
            "datasets": [*extra_datasets, {"name": "femnist", "root": str(root), "split": {"kind": "natural"}}],
            "methods": ["fedavg"],
        },
    )


@pytest.mark.parametrize("command", [["run", "--no-tracking"], ["plan", "--splits"]])
def test_a_label_out_of_range_names_its_shard_and_exits_2_before_any_job(tmp_path, capsys, command):
    write_leaf(tmp_path, "femnist", femnist_users([0, 1, 2]), femnist_users([3, 70]))
    synthetic = {
        "name": "synthetic",
        "params": {"num_users": 4, "dim": 5, "num_classes": 2, "max_samples": 20},
        "split": {"kind": "natural"},
        "num_clients": 2,
    }
    suite = femnist_suite(tmp_path, tmp_path, extra_datasets=(synthetic,))  # a good dataset first
    code = main(
        [command[0], str(suite), *command[1:]] + (["--results-dir", str(tmp_path / "r")] if command[0] == "run" else [])
    )
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "all_data_0_test.json" in err and "label 70" in err and "0..61" in err
    assert not (tmp_path / "r").exists()  # checked before the first (synthetic) job started


@pytest.mark.parametrize(
    "test_user, expected",
    [
        ({"x": [[0.5] * 784] * 2, "y": [3.5, 1]}, "label 3.5 (example 0) is not an integer"),  # was truncated to 3
        ({"x": [[0.5] * 784] * 2, "y": [True, 1]}, "label True (example 0) is not an integer"),
        ({"x": [[0.5] * 784, [0.5] * 783], "y": [1, 1]}, "u0"),  # ragged inputs
        ({"x": [[0.5] * 784] * 3, "y": [1, 1]}, "3 inputs but 2 labels"),
    ],
)
def test_a_malformed_leaf_user_names_its_shard_and_user(tmp_path, capsys, test_user, expected):
    write_leaf(tmp_path, "femnist", femnist_users([0, 1, 2]), {"u0": test_user})
    assert main(["plan", str(femnist_suite(tmp_path, tmp_path)), "--splits"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "Traceback" not in err and "all_data_0_test.json: user 'u0'" in err and expected in err, err


@pytest.mark.parametrize("executor", ["local", "ray"])  # ray: the driver has the data, so it checks it
def test_more_clients_than_users_is_refused_before_any_job_writes(tmp_path, capsys, executor):
    if executor == "ray":
        pytest.importorskip("ray")
    write_leaf(tmp_path, "femnist", femnist_users([0, 1, 2]), femnist_users([3, 1]))
    suite = femnist_suite(tmp_path, tmp_path, extra_datasets=({"name": "synthetic", "num_clients": 4},))
    args = ["run", str(suite), "--no-tracking", "--results-dir", str(tmp_path / "r"), "--set", "num_clients=2"]
    assert main([*args, "--executor", executor]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "num_clients = 2 but the dataset has only 1 users" in err and "femnist" in err
    assert not (tmp_path / "r").exists()  # the synthetic job, first in the suite, did not start


def test_source_problems_say_what_is_wrong():
    x, y = torch.zeros(3, 2), torch.tensor([0, 1, 1])
    ok = SourceData(x, y, x, y, 2, "vector")
    assert ok.problems() == []
    assert SourceData(x, y[:2], x, y, 2, "vector").problems() == ["train: 3 inputs but 2 labels"]
    assert SourceData(x, y, x, y.float(), 2, "vector").problems() == ["test labels are torch.float32, not integers"]
    nan = x.clone()
    nan[1, 0] = float("nan")
    assert SourceData(nan, y, x, y, 2, "vector").problems() == ["train inputs hold NaN or infinite values"]
    assert SourceData(x, y, torch.zeros(3, 4), y, 2, "vector").problems() == [
        "train inputs are (2,) but test inputs (4,)"
    ]
    assert SourceData(x, y, x, y, 2, "vector", train_users=torch.zeros(2)).problems() == [
        "2 user ids for 3 training examples"
    ]
    assert SourceData(x, torch.tensor([0, -1, 1]), x, y, 2, "vector").problems() == [
        "train label -1 (example 1) is outside 0..1"
    ]


def change_a_test_label(root) -> None:
    """The data were fixed: same shapes, other labels (as a new process would see them)."""
    shard = root / "femnist" / "data" / "test" / "all_data_0_test.json"
    blob = json.loads(shard.read_text())
    blob["user_data"]["u0"]["y"] = [2, 2]
    shard.write_text(json.dumps(blob))
    forget_loaded_data()


def fixed_later(tmp_path, *first_run: str):
    write_leaf(tmp_path / "data", "femnist", femnist_users([0, 1, 2, 3]), femnist_users([3, 1]))
    run = [
        "run",
        str(femnist_suite(tmp_path, tmp_path / "data")),
        "--no-tracking",
        "--results-dir",
        str(tmp_path / "r"),
    ]
    assert main(run + list(first_run)) == 0
    (job,) = [p for p in (tmp_path / "r" / "leaf").iterdir() if not p.name.startswith(".")]
    return run, JobDir(Store(tmp_path / "r"), job.name).path  # the suite's view links to the job's folder in the store


def test_results_of_changed_data_are_moved_aside_and_the_job_reruns(tmp_path, caplog):
    run, job = fixed_later(tmp_path)
    before = json.loads((job / "summary.json").read_text())["data_fingerprint"]
    change_a_test_label(tmp_path / "data")
    with caplog.at_level(logging.WARNING):
        assert main(run) == 0
    after = json.loads((job / "summary.json").read_text())
    assert after["data_fingerprint"] != before and not after.get("skipped")
    aside = job.with_name(f"{job.name}.data-{before}")
    assert json.loads((aside / "summary.json").read_text())["data_fingerprint"] == before  # nothing lost
    assert "computed on other data" in caplog.text


def test_a_checkpoint_of_changed_data_is_not_resumed(tmp_path, caplog):
    run, job = fixed_later(tmp_path, "--stop-after", "1")
    change_a_test_label(tmp_path / "data")
    with caplog.at_level(logging.WARNING):
        assert main(run) == 0
    assert "checkpoint.pt was written on other data" in caplog.text and "restarting job" in caplog.text
    assert json.loads((job / "summary.json").read_text())["status"] == "finished"
