import pytest
import torch
from data_fixtures import tar_gz, write_celeba, write_leaf

from benchmark.data.shakespeare import VOCAB
from benchmark.data.source import load_dataset
from benchmark.errors import DatasetMissing


def shakespeare_users():
    line = "To be, or not to be: that is the question. Whether 'tis nobler in the mind to su"
    assert len(line) == 80
    train = {
        "HAMLET_HAMLET": {"x": [line, line[1:] + "f"], "y": ["f", "f"]},
        "MACBETH_WITCH": {"x": [line], "y": ["\n"]},
    }
    test = {"HAMLET_HAMLET": {"x": [line], "y": ["}"]}, "MACBETH_WITCH": {"x": [line], "y": ["T"]}}
    return train, test


def test_vocabulary_is_leafs_80_symbols():
    assert len(VOCAB) == 80 and VOCAB[0] == "\n" and VOCAB[-1] == "}"


def test_shakespeare_encodes_windows_and_users(tmp_path):
    write_leaf(tmp_path, "shakespeare", *shakespeare_users())
    src = load_dataset("shakespeare", {}, tmp_path)
    assert src.kind == "sequence" and src.num_classes == 80
    assert src.train_x.shape == (3, 80) and src.train_x.dtype == torch.long
    assert "".join(VOCAB[i] for i in src.train_x[0].tolist()).startswith("To be, or not")
    assert src.train_y.tolist() == [VOCAB.index("f")] * 2 + [0]
    assert src.train_users.tolist() == [0, 0, 1] and src.user_names == ["HAMLET_HAMLET", "MACBETH_WITCH"]
    assert src.test_y.tolist() == [79, VOCAB.index("T")]
    assert src.test_users.tolist() == [0, 1]


def test_shakespeare_unknown_symbol_names_the_user(tmp_path):
    train, test = shakespeare_users()
    train["MACBETH_WITCH"]["x"] = ["é" * 80]
    write_leaf(tmp_path, "shakespeare", train, test)
    with pytest.raises(DatasetMissing, match="MACBETH_WITCH.*'é'"):
        load_dataset("shakespeare", {}, tmp_path)


def test_femnist_reads_the_archive_directly(tmp_path):
    px = [0.5] * 784
    write_leaf(tmp_path / "staging", "femnist", {"w1": {"x": [px, px], "y": [3, 61]}}, {"w1": {"x": [px], "y": [0]}})
    (tmp_path / "root").mkdir()
    tar_gz(tmp_path / "staging" / "femnist", tmp_path / "root" / "femnist-leaf-sample.tar.gz")
    src = load_dataset("femnist", {}, tmp_path / "root")
    assert src.train_x.shape == (2, 1, 28, 28) and src.train_y.tolist() == [3, 61] and src.user_names == ["w1"]


def test_leaf_missing_names_the_expected_path(tmp_path):
    with pytest.raises(DatasetMissing, match=f"shakespeare/data/{{train,test}}/\\*.json.*{tmp_path}/shakespeare/data"):
        load_dataset("shakespeare", {}, tmp_path)


def test_leaf_corrupt_shard_is_named(tmp_path):
    write_leaf(tmp_path, "shakespeare", *shakespeare_users())
    shard = tmp_path / "shakespeare" / "data" / "train" / "all_data_0_train.json"
    shard.write_text("{not json")
    with pytest.raises(DatasetMissing, match="all_data_0_train.json is not a LEAF JSON shard"):
        load_dataset("shakespeare", {}, tmp_path)


def test_celeba_resizes_to_the_param_size(tmp_path):
    write_celeba(tmp_path)
    src = load_dataset("celeba", {"image_size": 16}, tmp_path)
    assert src.train_x.shape == (4, 3, 16, 16) and src.train_x.dtype == torch.uint8
    assert src.test_x.shape == (2, 3, 16, 16)
    assert src.train_y.tolist() == [0, 1, 1, 1] and src.test_y.tolist() == [1, 0]
    assert src.train_users.tolist() == [0, 0, 1, 1] and src.num_classes == 2
    assert src.test_users.tolist() == [0, 1]
    assert load_dataset("celeba", {}, tmp_path).train_x.shape[-2:] == (84, 84)


def test_celeba_missing_images(tmp_path):
    write_celeba(tmp_path)
    (tmp_path / "celeba" / "data" / "raw" / "img_align_celeba" / "000003.jpg").unlink()
    with pytest.raises(DatasetMissing, match="000003.jpg"):
        load_dataset("celeba", {}, tmp_path)
