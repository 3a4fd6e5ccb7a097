"""Imports every module that registers a dataset source."""

from benchmark.data import leaf, synthetic  # noqa: F401
