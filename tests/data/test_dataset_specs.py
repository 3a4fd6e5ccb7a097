"""Each dataset is one spec in one file (data/source.py DatasetSpec), found by discovery."""

from __future__ import annotations

import inspect

import pytest

from benchmark.data.source import DATASETS, load_dataset
from benchmark.errors import UserError

EXPECTED = {"a9a", "celeba", "cifar10", "cifar100", "femnist", "shakespeare", "synthetic", "tiny_imagenet"}


def test_every_dataset_file_is_discovered():
    assert set(DATASETS.names()) == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_spec_holds_every_fact_about_its_dataset(name):
    spec = DATASETS.get(name)
    spec.params()  # the defaults are valid params
    if spec.probe is None:  # generated from params: nothing to find, download or build
        assert not spec.downloads and spec.raw_build is None
    else:
        assert spec.help and (spec.downloads or spec.raw_build or "LEAF" in spec.help)
    module = inspect.getmodule(spec.load).__name__
    assert module.startswith("benchmark.data.")


def test_an_unknown_dataset_lists_the_known_ones():
    with pytest.raises(UserError, match=r"unknown dataset 'cifar'; allowed: a9a, .*did you mean 'cifar10'"):
        load_dataset("cifar", {}, None)
