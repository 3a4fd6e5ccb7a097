"""Imports every module that registers a model."""

from benchmark.models import femnist_cnn, logistic  # noqa: F401
