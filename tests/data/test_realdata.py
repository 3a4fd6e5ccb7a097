"""Checks on the shipped real files ($FEDBENCH_DATA); skipped with a reason when it is unset."""

import numpy as np
import pytest
import torch

from benchmark.data.source import load_dataset
from benchmark.data.tiny_imagenet import TinyImageNetParams, find, load_split, split_files
from benchmark.errors import DatasetMissing

pytestmark = pytest.mark.realdata


def test_femnist_sample_counts(data_root, real_cache):
    src = load_dataset("femnist", {}, data_root)
    assert len(src.user_names) == 105 and len(src.train_y) == 14_708
    assert src.train_x.shape[1:] == (1, 28, 28) and int(src.train_y.max()) <= 61
    assert int(src.train_users.max()) == 104


def test_shakespeare_sample_counts(data_root, real_cache):
    src = load_dataset("shakespeare", {}, data_root)
    assert len(src.user_names) == 10 and len(src.train_y) == 41_990
    # the sample's test JSON holds 3,881 records although its num_samples header (and the data folder's README) say 4,671
    assert len(src.test_y) == 3_881 and src.train_x.shape[1] == 80


def test_a9a_shapes(data_root):
    src = load_dataset("a9a", {}, data_root)
    assert src.train_x.shape == (32_561, 123) and src.test_x.shape == (16_281, 123)
    assert set(np.unique(src.train_y).tolist()) == {0, 1}  # numpy arrays: a FedAc run imports no torch


def test_tiny_imagenet_val_layout_counts(data_root, real_cache):
    files, labels = split_files(find(TinyImageNetParams(), data_root).path, "val")
    assert len(files) == 10_000 and torch.bincount(labels).tolist() == [50] * 200
    with pytest.raises(DatasetMissing, match="train split is missing"):
        load_split(TinyImageNetParams(), data_root, "train")


@pytest.mark.slow
def test_tiny_imagenet_val_decodes(data_root, real_cache):
    val = load_split(TinyImageNetParams(), data_root, "val")
    assert val["x"].shape == (10_000, 3, 64, 64) and val["x"].dtype == torch.uint8


@pytest.mark.slow
def test_cifar10_jpeg_counts(data_root, real_cache):
    src = load_dataset("cifar10", {}, data_root)
    assert src.train_x.shape == (50_000, 3, 32, 32) and src.test_x.shape == (10_000, 3, 32, 32)
    assert torch.bincount(src.train_y).tolist() == [5_000] * 10
    assert torch.bincount(src.test_y).tolist() == [1_000] * 10
    assert all(0.4 < m < 0.55 for m in src.mean)
