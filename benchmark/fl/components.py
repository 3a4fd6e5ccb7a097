"""Imports every module that registers server rules, client terms, codecs and presets."""

from benchmark.fl import codecs, servers, terms  # noqa: F401
