"""The Hugging Face path, against a stand-in for the `datasets` package (not installed here)."""

import sys
import types

import numpy as np
import pytest
import torch
from PIL import Image

from benchmark.data.source import load_dataset
from benchmark.data.tiny_imagenet import TinyImageNetParams, load_split
from benchmark.errors import DatasetMissing


class Table(dict):
    @property
    def column_names(self):
        return list(self)


def image(value: int, size: int) -> Image.Image:
    return Image.fromarray(np.full((size, size, 3), value, dtype=np.uint8))


@pytest.fixture
def fake_datasets(monkeypatch):
    calls = []

    def load_dataset(source, data_dir=None):
        calls.append(("load_dataset", source, data_dir))
        if source == "uoft-cs/cifar10":
            return {
                "train": Table(img=[image(1, 32), image(2, 32)], label=[3, 4]),
                "test": Table(img=[image(5, 32)], label=[9]),
            }
        return {
            "valid": Table(image=[image(7, 64).convert("L")], label=[199]),
            "train": Table(image=[image(8, 64)], label=[0]),
        }

    def load_from_disk(path):
        calls.append(("load_from_disk", path))
        return {"train": Table(img=[image(1, 32)], label=[0]), "test": Table(pixels=[0], label=[0])}

    monkeypatch.setitem(
        sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset, load_from_disk=load_from_disk)
    )
    return calls


def test_cifar_from_the_hub_when_asked(tmp_path, fake_datasets):
    src = load_dataset("cifar10", {"format": "hf", "hf_id": "uoft-cs/cifar10"}, tmp_path)
    assert src.train_x.shape == (2, 3, 32, 32) and src.train_x.dtype == torch.uint8
    assert src.train_x[1].unique().tolist() == [2] and src.train_y.tolist() == [3, 4] and src.test_y.tolist() == [9]
    assert fake_datasets == [("load_dataset", "uoft-cs/cifar10", None)]


def test_local_parquet_copy_wins_over_the_hub_and_grey_images_become_rgb(tmp_path, fake_datasets):
    (tmp_path / "tiny-imagenet-hf" / "data").mkdir(parents=True)
    (tmp_path / "tiny-imagenet-hf" / "data" / "valid-00000.parquet").write_bytes(b"PAR1")
    val = load_split(TinyImageNetParams(hf_id="zh-plus/tiny-imagenet"), tmp_path, "val")
    assert val["x"].shape == (1, 3, 64, 64) and val["y"].tolist() == [199]
    assert fake_datasets == [("load_dataset", "parquet", str(tmp_path / "tiny-imagenet-hf"))]


def test_missing_image_column_is_explained(tmp_path, fake_datasets):
    (tmp_path / "cifar10-hf").mkdir()
    (tmp_path / "cifar10-hf" / "dataset_dict.json").write_text("{}")
    with pytest.raises(DatasetMissing, match=r"cifar10-hf/test: expected an image column \(img/image\)"):
        load_dataset("cifar10", {}, tmp_path)
