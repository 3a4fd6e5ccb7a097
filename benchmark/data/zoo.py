"""Imports every module that registers a dataset source."""

from benchmark.data import a9a, celeba, cifar, leaf, shakespeare, synthetic, tiny_imagenet  # noqa: F401
