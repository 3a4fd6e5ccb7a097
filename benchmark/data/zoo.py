"""Imports every module that registers a dataset source (and augment: the image preprocessor)."""

from benchmark.data import a9a, augment, celeba, cifar, leaf, shakespeare, synthetic, tiny_imagenet  # noqa: F401
