import pytest
import torch
from data_fixtures import write_libsvm

from benchmark.data.source import load_dataset
from benchmark.errors import DatasetMissing


def test_sparse_text_becomes_dense_with_01_labels(tmp_path):
    write_libsvm(tmp_path / "a9a", [(-1, {1: 1, 123: 1}), (1, {5: 0.5})])
    write_libsvm(tmp_path / "a9a.t", [(1, {2: 1})], gz=True)
    src = load_dataset("a9a", {}, tmp_path)
    assert src.train_x.shape == (2, 123) and src.train_x.dtype == torch.float32 and src.kind == "vector"
    assert src.train_x[0, 0] == 1 and src.train_x[0, 122] == 1 and src.train_x[1, 4] == 0.5
    assert src.train_x.sum() == 2.5
    assert src.train_y.tolist() == [0, 1] and src.test_y.tolist() == [1] and src.num_classes == 2


def test_index_beyond_features_names_the_line(tmp_path):
    write_libsvm(tmp_path / "a9a", [(1, {1: 1}), (1, {124: 1})])
    write_libsvm(tmp_path / "a9a.t", [(1, {1: 1})])
    with pytest.raises(DatasetMissing, match=r"a9a:2: .*124 outside 1..123"):
        load_dataset("a9a", {}, tmp_path)


def test_missing_test_file_names_both_forms(tmp_path):
    write_libsvm(tmp_path / "a9a", [(1, {1: 1})])
    with pytest.raises(DatasetMissing, match=f"{tmp_path}/a9a.t or {tmp_path}/a9a.t.gz"):
        load_dataset("a9a", {}, tmp_path)


@pytest.mark.parametrize("name", ["a9a", "femnist", "cifar10", "tiny_imagenet"])
def test_without_a_root_messages_say_root_and_what_it_stands_for(name):
    with pytest.raises(DatasetMissing) as err:
        load_dataset(name, {}, None)
    text = str(err.value)
    assert "<root>" in text and "(unset)" not in text
    assert text.endswith("<root> is $FEDBENCH_DATA or the dataset's 'root:' in the suite; neither is set")
