import pytest
import torch
from data_fixtures import tar_gz, write_tiny_imagenet

from benchmark.data.source import load_dataset
from benchmark.data.tiny_imagenet import TinyImageNetParams, load_split
from benchmark.errors import DatasetMissing


def test_official_layout_both_splits(tmp_path):
    write_tiny_imagenet(tmp_path)
    src = load_dataset("tiny_imagenet", {}, tmp_path)
    assert src.train_x.shape == (200, 3, 64, 64) and src.test_x.shape == (200, 3, 64, 64)
    assert src.train_x.dtype == torch.uint8 and src.num_classes == 200
    # classes are the sorted wnids (wnids.txt lists them reversed here); val labels come from the annotations
    assert src.test_y.tolist() == list(range(200)) and src.train_y.tolist() == list(range(200))
    assert src.mean is not None and len(src.std) == 3


def test_val_split_alone_from_val_only_archive(tmp_path):
    write_tiny_imagenet(tmp_path / "staging", with_train=False, per_class=2)
    (tmp_path / "root").mkdir()
    tar_gz(tmp_path / "staging" / "tiny-imagenet-200", tmp_path / "root" / "tiny-imagenet-200-val.tar.gz")
    val = load_split(TinyImageNetParams(), tmp_path / "root", "val")
    assert val["x"].shape == (400, 3, 64, 64)
    assert torch.bincount(val["y"]).tolist() == [2] * 200
    with pytest.raises(
        DatasetMissing,
        match=r"train split is missing.*tiny-imagenet-200/train/<wnid>/images.*tiny-imagenet-200-val.tar.gz",
    ):
        load_dataset("tiny_imagenet", {}, tmp_path / "root")


def test_missing_val_image_is_named(tmp_path):
    write_tiny_imagenet(tmp_path)
    (tmp_path / "tiny-imagenet-200" / "val" / "images" / "val_7.JPEG").unlink()
    with pytest.raises(DatasetMissing, match="val_7.JPEG"):
        load_split(TinyImageNetParams(), tmp_path, "val")


def test_nothing_there(tmp_path):
    with pytest.raises(DatasetMissing, match=f"{tmp_path}/tiny-imagenet-200/ or {tmp_path}/tiny-imagenet-200.zip"):
        load_split(TinyImageNetParams(), tmp_path, "val")
