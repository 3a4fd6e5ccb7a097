"""Imports every module that registers a dataset source."""

from benchmark.data import augment, leaf, synthetic  # noqa: F401  (augment: the image preprocessor)
