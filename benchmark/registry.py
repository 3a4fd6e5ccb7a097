"""Name -> item registries that fill themselves: reading one first imports every module of its
package once, so a new method, dataset or executor is one file that registers itself."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import Generic, TypeVar

from benchmark.errors import UserError
from benchmark.suggest import allowed_names

T = TypeVar("T")


@functools.cache
def discover(package: str) -> None:
    """Import every module of `package` once (each registers what it defines)."""
    module = importlib.import_module(package)
    for info in pkgutil.iter_modules(module.__path__):
        importlib.import_module(f"{package}.{info.name}")


class Registry(Generic[T]):
    """Items registered under their `name` attribute; `package` is where they are defined."""

    def __init__(self, kind: str, package: str):
        self.kind, self.package = kind, package
        self._items: dict[str, T] = {}

    def register(self, item: T) -> T:
        """Usable as a class decorator, or called with an instance (a dataset's spec)."""
        name = item.name  # type: ignore[attr-defined]
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._items[name] = item
        return item

    def get(self, name: str) -> T:
        """The item called `name`; KeyError when there is none."""
        discover(self.package)
        return self._items[name]

    def require(self, name: str) -> T:
        """The item called `name`; a UserError listing the names when there is none."""
        if name not in self:
            raise UserError(f"unknown {self.kind} {name!r}; " + allowed_names(name, self.names()))
        return self._items[name]

    def __contains__(self, name: object) -> bool:
        discover(self.package)
        return name in self._items

    def names(self) -> list[str]:
        discover(self.package)
        return sorted(self._items)
