"""The Hugging Face path with the real `datasets` library (skipped when it is not installed):
a `save_to_disk` folder and a folder of parquet shards, as users have them offline."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from benchmark.data.source import load_dataset

datasets = pytest.importorskip("datasets")
PIL = pytest.importorskip("PIL.Image")


def tiny_dataset_dict(n_train: int = 6, n_test: int = 3):
    rng = np.random.default_rng(0)

    def split(n):
        pixels = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
        features = datasets.Features({"img": datasets.Image(), "label": datasets.ClassLabel(num_classes=10)})
        return datasets.Dataset.from_dict(
            {"img": [PIL.fromarray(p) for p in pixels], "label": (np.arange(n) % 10).tolist()}, features=features
        ), pixels

    (train, train_px), (test, test_px) = split(n_train), split(n_test)
    return datasets.DatasetDict({"train": train, "test": test}), train_px, test_px


def check(src, train_px, test_px):
    assert src.train_x.dtype == torch.uint8 and src.train_x.shape == (6, 3, 32, 32)
    assert torch.equal(src.train_x, torch.from_numpy(train_px).permute(0, 3, 1, 2))  # lossless (PNG)
    assert torch.equal(src.test_x, torch.from_numpy(test_px).permute(0, 3, 1, 2))
    assert src.train_y.tolist() == [0, 1, 2, 3, 4, 5] and src.num_classes == 10


def test_save_to_disk_folder(tmp_path):
    dd, train_px, test_px = tiny_dataset_dict()
    dd.save_to_disk(str(tmp_path / "cifar10-hf"))
    check(load_dataset("cifar10", {"format": "hf"}, tmp_path), train_px, test_px)


def test_parquet_shards_as_downloaded_from_the_hub(tmp_path):
    dd, train_px, test_px = tiny_dataset_dict()
    (tmp_path / "cifar10-hf" / "plain_text").mkdir(parents=True)
    for name, split in dd.items():
        split.to_parquet(str(tmp_path / "cifar10-hf" / "plain_text" / f"{name}-00000-of-00001.parquet"))
    check(load_dataset("cifar10", {"format": "hf"}, tmp_path), train_px, test_px)
