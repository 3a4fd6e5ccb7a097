"""Name -> item registries that fill themselves: reading one first imports every module of its
package once, so a new method, dataset or executor is one file that registers itself; then the
installed plugins (benchmark/plugins.py). Every name records the module that registered it.

The registries of LAZY_PACKAGES (methods, datasets, executors) are read lazily: a name that
benchmark/builtin_names.py lists imports only the module that registers it, so a run imports none
of the methods, datasets and executors it does not use; any other name, or a listing of the names,
imports the whole package as above."""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import pkgutil
import sys
from typing import Generic, TypeVar

from benchmark import plugins
from benchmark.builtin_names import BUILT_IN_NAMES
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


LAZY_PACKAGES = ("benchmark.fl", "benchmark.data", "benchmark.run")
REGISTERED: list[tuple[str, str, str]] = []  # (kind, name, module) of every registration: the manifest's source
_installed_read = False


def load_installed() -> None:
    """The plugin modules of every installed entry point of the group `fedbench.plugins` and of
    $FEDBENCH_PLUGINS; once (benchmark/plugins.py). fedbench's own names need not be imported first:
    a plugin taking one of them fails at its import all the same (check_new reads BUILT_IN_NAMES)."""
    global _installed_read
    if _installed_read:
        return
    _installed_read = True
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
    """Record `origin` for `name`; a UserError naming both origins when `name` is taken, or is one of
    fedbench's own whose module is not imported yet (in a plugin, the user's to fix)."""
    built_in = BUILT_IN_NAMES.get(kind, {}).get(name, origin)
    if name in origins or built_in != origin:
        moved = name not in origins and origin.startswith("benchmark.")  # the list names another module of ours
        stale = " (moved? run `python -m benchmark.registry_manifest`)" if moved else ""
        raise UserError(f"{kind} {name!r} is registered twice: by {origins.get(name, built_in)} and by {origin}{stale}")
    origins[name] = origin
    REGISTERED.append((kind, name, origin))


def import_registering(kind: str, name: str, package: str, origins: dict[str, str]) -> None:
    """Import the module that registers `name` (BUILT_IN_NAMES), then the plugins; every module of
    `package` when that does not register it (a new file; an unknown name, whose suggestions need every
    name; a name moved without rewriting the list, which check_new then reports)."""
    module = BUILT_IN_NAMES.get(kind, {}).get(name)
    if module is not None:
        importlib.import_module(module)
        load_installed()
    if name not in origins:
        discover(package)


class Registry(Generic[T]):
    """Items registered under their `name` attribute; `package` is where they are defined (None: in the
    registry's own module, so a read only loads the plugins; one of LAZY_PACKAGES: read lazily)."""

    def __init__(self, kind: str, package: str | None):
        self.kind, self.package = kind, package
        self.lazy = package in LAZY_PACKAGES
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

    def _fill_for(self, name: object) -> None:
        """Fill enough to know whether `name` is here: a lazy registry imports its module alone."""
        if not self.lazy:
            self._fill()
        elif name not in self._items and isinstance(name, str):
            import_registering(self.kind, name, self.package, self._origins)
        else:
            load_installed()  # the plugins come with any first read

    def get(self, name: str) -> T:
        """The item called `name`; KeyError when there is none."""
        self._fill_for(name)
        return self._items[name]

    def require(self, name: str) -> T:
        """The item called `name`; a UserError listing the names when there is none."""
        if name not in self:
            raise UserError(unknown_name(self.kind, name, self.names()))
        return self._items[name]

    def __contains__(self, name: object) -> bool:
        self._fill_for(name)
        return name in self._items

    def names(self) -> list[str]:
        self._fill()
        return sorted(self._items)

    def in_order(self) -> list[T]:
        """Every item, fedbench's own first (in the order they were registered), then the plugins'."""
        self._fill()
        own = [name for name, origin in self._origins.items() if origin.startswith("benchmark.")]
        return [self._items[name] for name in own + [name for name in self._items if name not in own]]
