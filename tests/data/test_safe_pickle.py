import os
import pickle

import numpy as np
import pytest
from data_fixtures import write_cifar_pickles

from benchmark.data.safe_pickle import safe_load_pickle
from benchmark.data.source import load_dataset
from benchmark.errors import DatasetMissing


class RunsShell:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


def test_plain_data_round_trips(tmp_path):
    path = tmp_path / "ok.pkl"
    blob = {b"data": np.arange(6, dtype=np.uint8).reshape(2, 3), b"labels": [1, 2], "name": "x"}
    path.write_bytes(pickle.dumps(blob, protocol=2))
    got = safe_load_pickle(path)
    assert got[b"labels"] == [1, 2] and got[b"data"].tolist() == [[0, 1, 2], [3, 4, 5]]


def test_code_executing_pickle_is_rejected_before_it_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_cifar_pickles(tmp_path)
    (tmp_path / "cifar-10-batches-py" / "data_batch_2").write_bytes(pickle.dumps({b"data": RunsShell()}, protocol=2))
    with pytest.raises(DatasetMissing, match=r"data_batch_2.*refusing to load (posix|os)\.system"):
        load_dataset("cifar10", {}, tmp_path)
    assert not (tmp_path / "pwned").exists()
