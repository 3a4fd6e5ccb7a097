"""Name -> component class registries; a new method part registers itself with a decorator."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, type[T]] = {}

    def register(self, cls: type[T]) -> type[T]:
        name = cls.name  # type: ignore[attr-defined]
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._items[name] = cls
        return cls

    # reading a registry first imports every method file, so it is always complete
    def get(self, name: str) -> type[T]:
        discover()
        return self._items[name]

    def __contains__(self, name: object) -> bool:
        discover()
        return name in self._items

    def names(self) -> list[str]:
        discover()
        return sorted(self._items)


SERVER_RULES: Registry = Registry("server rule")
CLIENT_TERMS: Registry = Registry("client term")
CODECS: Registry = Registry("codec")


@functools.cache
def discover() -> None:
    """Import every module of benchmark.fl once: a method file registers its parts and presets."""
    import benchmark.fl as package

    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{info.name}")
