"""LEAF FEMNIST from LEAF's JSON layout: generated fixtures, a missing path, and the shipped sample."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fedtest import REPO, write_suite

from benchmark.cli import main
from benchmark.data.source import load_dataset
from benchmark.errors import DatasetMissing


def write_leaf_shard(path, users: dict[str, int], rng, classes: int = 62):
    blob = {
        "users": list(users),
        "num_samples": list(users.values()),
        "user_data": {
            u: {"x": rng.random((n, 784)).round(3).tolist(), "y": rng.integers(0, classes, n).tolist()}
            for u, n in users.items()
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(blob))


@pytest.fixture
def femnist_root(tmp_path):
    rng = np.random.default_rng(0)
    base = tmp_path / "femnist" / "data"
    write_leaf_shard(base / "train" / "all_data_0_train.json", {"f_a": 5, "f_b": 3}, rng)
    write_leaf_shard(base / "train" / "all_data_1_train.json", {"f_c": 4, "f_nontest": 2}, rng)
    write_leaf_shard(base / "test" / "all_data_0_test.json", {"f_a": 2, "f_b": 1, "f_c": 1}, rng)
    return tmp_path


def test_users_become_natural_clients(femnist_root):
    src = load_dataset("femnist", {}, femnist_root)
    assert src.user_names == ["f_a", "f_b", "f_c"]  # users without test data are left out
    assert src.train_x.shape == (12, 1, 28, 28) and src.test_x.shape == (4, 1, 28, 28)
    assert src.train_users.tolist() == [0] * 5 + [1] * 3 + [2] * 4
    assert src.test_users.tolist() == [0, 0, 1, 2]  # each test example's user, for per-client accuracy
    again = load_dataset("femnist", {}, femnist_root)  # read back from the tensor cache
    assert again.test_users.tolist() == [0, 0, 1, 2]
    assert src.num_classes == 62


def test_a_suite_runs_on_leaf_json(femnist_root, tmp_path):
    suite = {
        "name": "leaf",
        "defaults": {
            "rounds": 2,
            "num_clients": 3,
            "participation": {"rate": 1.0},
            "local": {"steps": 2, "batch_size": 4},
            "model": {"name": "femnist_cnn"},
        },
        "datasets": [{"name": "femnist", "root": str(femnist_root), "split": {"kind": "natural"}}],
        "methods": ["fedavg"],
    }
    assert main(["run", str(write_suite(tmp_path, suite)), "--no-tracking", "--results-dir", str(tmp_path / "r")]) == 0


def test_missing_dataset_says_what_to_put_where(tmp_path, capsys):
    with pytest.raises(DatasetMissing) as err:
        load_dataset("femnist", {}, tmp_path / "nowhere")
    assert "femnist/data" in str(err.value) and "LEAF" in str(err.value)
    suite = {
        "name": "leaf",
        "datasets": [{"name": "femnist", "root": str(tmp_path / "nowhere"), "split": {"kind": "natural"}}],
        "methods": ["fedavg"],
        "defaults": {"num_clients": 2, "model": {"name": "femnist_cnn"}},
    }
    assert main(["run", str(write_suite(tmp_path, suite)), "--no-tracking", "--results-dir", str(tmp_path / "r")]) == 2
    assert "femnist/data" in capsys.readouterr().err


def test_malformed_shard_is_reported(tmp_path):
    (tmp_path / "femnist" / "data" / "train").mkdir(parents=True)
    (tmp_path / "femnist" / "data" / "test").mkdir(parents=True)
    (tmp_path / "femnist" / "data" / "train" / "bad.json").write_text("{not json")
    with pytest.raises(DatasetMissing, match="bad.json"):
        load_dataset("femnist", {}, tmp_path)


@pytest.mark.realdata
def test_shipped_femnist_sample_trains(data_root, tmp_path):
    """Straight from the shipped archive under $FEDBENCH_DATA, through the CLI."""
    suite = {
        "name": "femnist-real",
        "defaults": {
            "rounds": 3,
            "num_clients": 20,
            "participation": {"rate": 0.25},
            "local": {"epochs": 1, "batch_size": 32, "lr": 0.05},
            "model": {"name": "femnist_cnn"},
        },
        "datasets": [{"name": "femnist", "root": str(data_root), "split": {"kind": "natural"}}],
        "methods": ["fedavg"],
    }
    results = tmp_path / "r"
    assert main(["run", str(write_suite(tmp_path, suite)), "--no-tracking", "--results-dir", str(results)]) == 0
    (summary,) = [json.loads(p.read_text()) for p in results.glob("femnist-real/*/summary.json")]
    assert summary["status"] == "finished" and summary["final_acc"] > 100 / 62  # beats chance


def test_a_num_samples_header_that_disagrees_with_the_records_is_reported(femnist_root):
    shard = femnist_root / "femnist" / "data" / "test" / "all_data_0_test.json"
    blob = json.loads(shard.read_text())
    blob["num_samples"][0] += 5
    shard.write_text(json.dumps(blob))
    with pytest.warns(UserWarning, match="num_samples says 9 examples but the shard holds 4"):
        src = load_dataset("femnist", {}, femnist_root)
    assert len(src.test_y) == 4


@pytest.mark.realdata
def test_the_leaf_paper_suite_on_the_shipped_sample_says_it_has_too_few_writers(data_root, real_cache, capsys):
    """FedACG's LEAF table needs 2,000 FEMNIST writers; LEAF's shipped sample has 105."""
    suite = REPO / "suites" / "papers" / "fedacg.leaf.yaml"
    assert main(["plan", str(suite), "--splits"]) == 2
    assert "num_clients = 2000 but the dataset has only 105 users" in capsys.readouterr().err
