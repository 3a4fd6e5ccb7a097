"""The clients' order of a LEAF dataset, which the participation draw picks from: fedbench's (users as
they first appear in the name-sorted JSON shards) or LEAF's models' (user ids sorted), chosen by
`user_order` (issue 36 point 4)."""

from __future__ import annotations

import numpy as np
import pytest
from test_leaf_femnist import write_leaf_shard

from benchmark.cli import main
from benchmark.data.source import load_dataset


@pytest.fixture
def shuffled_ids(tmp_path):
    """Shards whose first-seen order (w9, w10, w2) is neither sorted nor LEAF's sorted ids (w10, w2, w9)."""
    rng = np.random.default_rng(0)
    base = tmp_path / "femnist" / "data"
    write_leaf_shard(base / "train" / "all_data_0_train.json", {"w9": 3, "w10": 2}, rng)
    write_leaf_shard(base / "train" / "all_data_1_train.json", {"w2": 4}, rng)
    write_leaf_shard(base / "test" / "all_data_0_test.json", {"w2": 1, "w9": 1, "w10": 1}, rng)
    return tmp_path


def test_files_order_is_the_default_and_name_order_is_leafs(shuffled_ids):
    files = load_dataset("femnist", {}, shuffled_ids)
    assert files.user_names == ["w9", "w10", "w2"]
    leaf = load_dataset("femnist", {"user_order": "name"}, shuffled_ids)
    assert leaf.user_names == sorted(["w9", "w10", "w2"]) == ["w10", "w2", "w9"]
    assert leaf.train_users.tolist() == [0] * 2 + [1] * 4 + [2] * 3  # examples follow their user
    for name in ("w9", "w10", "w2"):  # the same examples, under another client index
        a = files.train_x[files.train_users == files.user_names.index(name)]
        b = leaf.train_x[leaf.train_users == leaf.user_names.index(name)]
        assert a.equal(b)


def test_user_order_on_a_hub_table_is_refused(shuffled_ids, tmp_path, capsys):
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: order-on-hf\ndatasets:\n  - name: femnist\n    root: " + str(shuffled_ids) + "\n"
        "    params: {format: hf, user_order: name}\nmethods: [fedavg]\n"
    )
    assert main(["plan", str(suite), "--splits"]) == 2
    assert "user_order applies to LEAF's JSON" in capsys.readouterr().err
