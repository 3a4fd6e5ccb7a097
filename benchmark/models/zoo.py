"""Imports every module that registers a model."""

from benchmark.models import celeba_cnn, femnist_cnn, logistic, resnet_gn, shakespeare_lstm  # noqa: F401
