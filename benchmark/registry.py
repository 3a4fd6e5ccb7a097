"""Name -> item registries that fill themselves: reading one first imports every module of its
package once, so a new method, dataset or executor is one file that registers itself; then the
installed plugins (benchmark/plugins.py). Every name records the module that registered it."""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import pkgutil
import sys
from typing import Generic, TypeVar

from benchmark import plugins
from benchmark.errors import UserError
from benchmark.suggest import unknown_name

T = TypeVar("T")


@functools.cache
def discover(package: str) -> None:
    """Import every module of `package` once (each registers what it defines), then the plugins."""
    module = importlib.import_module(package)
    for info in pkgutil.iter_modules(module.__path__):
        importlib.import_module(f"{package}.{info.name}")
    load_installed()


# Filled before the plugins are imported, so that a clash fails at the plugin's import (a plugin that
# reads a model imports models/registry.py itself). benchmark.run (the executors) imports torch and is
# left to its first read: a plugin executor that takes a built-in name fails then, naming both too.
BUILT_IN = ("benchmark.fl", "benchmark.data")
_installed_read = False


def load_installed() -> None:
    """fedbench's own registrations, then the plugin modules of every installed entry point of the
    group `fedbench.plugins` and of $FEDBENCH_PLUGINS; once (benchmark/plugins.py)."""
    global _installed_read
    if _installed_read:
        return
    _installed_read = True
    for package in BUILT_IN:
        discover(package)
    for entry in importlib.metadata.entry_points(group=plugins.GROUP):
        dist = f"{entry.dist.name} {entry.dist.version}" if entry.dist else "an installed distribution"
        plugins.import_installed(entry.module, f"entry point {entry.name!r} of {dist}")
    for module in filter(None, (m.strip() for m in os.environ.get(plugins.ENV, "").split(","))):
        plugins.import_installed(module, f"${plugins.ENV}")


def registering_module(depth: int = 2) -> str:
    """The module whose code called the registering function (`depth` frames up): an origin that
    a name registered twice reports, so a plugin's clash names both modules."""
    return sys._getframe(depth).f_globals.get("__name__", "?")


def check_new(kind: str, name: str, origins: dict[str, str], origin: str) -> None:
    """Record `origin` for `name`; a UserError naming both origins when `name` is taken (in a
    plugin, the user's to fix)."""
    if name in origins:
        raise UserError(f"{kind} {name!r} is registered twice: by {origins[name]} and by {origin}")
    origins[name] = origin


class Registry(Generic[T]):
    """Items registered under their `name` attribute; `package` is where they are defined (None: in the
    registry's own module, so a read only loads the plugins)."""

    def __init__(self, kind: str, package: str | None):
        self.kind, self.package = kind, package
        self._items: dict[str, T] = {}
        self._origins: dict[str, str] = {}  # name -> the module that registered it
        plugins.withdrawable(self._origins, self._items.pop)

    def register(self, item: T) -> T:
        """Usable as a class decorator, or called with an instance (a dataset's spec)."""
        name = item.name  # type: ignore[attr-defined]
        check_new(self.kind, name, self._origins, registering_module())
        self._items[name] = item
        return item

    def _fill(self) -> None:
        if self.package is None:
            load_installed()
        else:
            discover(self.package)

    def get(self, name: str) -> T:
        """The item called `name`; KeyError when there is none."""
        self._fill()
        return self._items[name]

    def require(self, name: str) -> T:
        """The item called `name`; a UserError listing the names when there is none."""
        if name not in self:
            raise UserError(unknown_name(self.kind, name, self.names()))
        return self._items[name]

    def __contains__(self, name: object) -> bool:
        self._fill()
        return name in self._items

    def names(self) -> list[str]:
        self._fill()
        return sorted(self._items)

    def in_order(self) -> list[T]:
        """Every item, in the order they were registered (fedbench's own first, then the plugins')."""
        self._fill()
        return list(self._items.values())
