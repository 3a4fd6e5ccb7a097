"""The method parts' registries; a new method part registers itself with a decorator."""

from __future__ import annotations

from benchmark.registry import Registry
from benchmark.registry import discover as discover_package

PACKAGE = "benchmark.fl"
SERVER_RULES: Registry = Registry("server rule", PACKAGE)
CLIENT_TERMS: Registry = Registry("client term", PACKAGE)
CODECS: Registry = Registry("codec", PACKAGE)


def discover() -> None:
    """Import every module of benchmark.fl once: a method file registers its parts and presets."""
    discover_package(PACKAGE)
