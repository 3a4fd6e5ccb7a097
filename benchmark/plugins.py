"""Plugins: methods, models, datasets and executors defined outside fedbench, in a module that
registers them as fedbench's own files do (through `fedbench`, the public API, benchmark/api.py).

A plugin module is named in one of two ways:
- an installed distribution's entry point in the group `fedbench.plugins` (its value is the
  module), imported the first time any registry is read;
- a suite's `plugins:`, imported when the suite is loaded, before it is validated against the
  registries: an installed (or PYTHONPATH) module by name (`my_pkg.methods`), or a file by its
  path relative to the suite (`./mymethod.py`). Never the current folder by accident: `python -m
  benchmark` drops the folder Python puts first on sys.path (benchmark/__main__.py), as `fedbench` has none.
Either way fedbench's own names are known first (benchmark/builtin_names.py, read by registry.check_new,
without importing their modules), so a plugin that registers a name fedbench already has fails at its own
import, naming both modules.
A broken installed plugin (an entry point, or $FEDBENCH_PLUGINS) is contained: it is reported once
(a warning with its distribution, module and the failing line) and skipped, so suites that use none
of its names still run; a name it would have given is "unknown" with the plugin named (`broken_note`).
A suite's own `plugins:` that fails is that suite's error (exit 2). The Ray executor ships the source of
every plugin module imported here to its workers and names them in $FEDBENCH_PLUGINS there
(ray_worker.code_runtime_env), where the first registry read imports them again.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from benchmark.errors import SuiteError, UserError

GROUP = "fedbench.plugins"
ENV = "FEDBENCH_PLUGINS"  # comma-separated modules: how the Ray executor names them to its workers

log = logging.getLogger("fedbench.plugins")
_imported: dict[str, str] = {}  # plugin module -> what named it
_broken: dict[str, str] = {}  # installed plugin module that failed to import -> why (the PluginError's text)


class PluginError(UserError):
    """A plugin module that cannot be imported, or registers a name that is taken."""


def import_plugin(module: str, named_by: str) -> None:
    """Import plugin `module` once; a PluginError naming it and what went wrong."""
    if module in _imported:
        return
    _imported[module] = named_by  # before importing: a plugin that reads a registry does not re-enter
    try:
        importlib.import_module(module)
    except Exception as err:  # a plugin's own bug (not only ImportError) is this suite's error, not a crash
        del _imported[module]
        raise PluginError(f"plugin module {module!r} ({named_by}) cannot be imported: {_describe(err)}") from None


# (origins, remove) of every table of names: each registry, the presets', the models'
_TABLES: list[tuple[dict[str, str], Callable[[str], object]]] = []


def withdrawable(origins: dict[str, str], remove: Callable[[str], object]) -> None:
    """Declare a table of names (name -> registering module) and how to remove one, for `withdraw`."""
    _TABLES.append((origins, remove))


def withdraw(module: str) -> None:
    """Forget every name `module` (or a submodule) registered before its import failed: half a
    broken plugin must not run, and a suite naming its parts then exits 2 naming it."""
    for origins, remove in _TABLES:
        for name in [n for n, origin in origins.items() if origin == module or origin.startswith(module + ".")]:
            del origins[name]
            remove(name)


def import_installed(module: str, named_by: str) -> None:
    """Import an installed plugin (an entry point's, $FEDBENCH_PLUGINS'); one that fails is warned
    about once and skipped: suites that use none of its names must not pay for it."""
    try:
        import_plugin(module, named_by)
    except PluginError as err:
        withdraw(module)
        if module not in _broken:
            _broken[module] = str(err)
            log.warning("%s; skipped: suites that use none of its names run without it", err)


def broken_note() -> str:
    """For an "unknown name" error: the installed plugins that failed to import (one may define it)."""
    if not _broken:
        return ""
    return "; " + "; ".join(f"{why} (it may define this name: fix or uninstall it)" for why in _broken.values())


def _describe(err: Exception) -> str:
    """The error and the line of plugin code that raised it, with its text (not fedbench's own frames)."""
    text = f"{type(err).__name__}: {err}"
    ours = str(Path(__file__).parent)
    frames = [f for f in traceback.extract_tb(err.__traceback__) if not f.filename.startswith(ours)]
    frames = [
        f for f in frames if not f.filename.startswith(("<frozen importlib", "<string>"))
    ]  # <string>: generated code
    if frames:
        last = frames[-1]
        text += f" ({last.filename}:{last.lineno}" + (f": {last.line}" if last.line else "") + ")"
    if isinstance(err, ModuleNotFoundError):
        text += "; is it installed, or on PYTHONPATH?"
    return text


def is_path(entry: str) -> bool:
    """A `plugins:` entry that names a file (`./mymethod.py`), not a module (`my_pkg.methods`)."""
    return "/" in entry or entry.endswith(".py")


def anchored(entries, folder: Path):
    """`plugins:` as read from a suite file in `folder`: each path made absolute from there (an
    extending suite's own paths and its parent's each count from their own file); other values as given."""
    if not isinstance(entries, list):
        return entries
    return [str(folder.absolute() / e) if isinstance(e, str) and is_path(e) else e for e in entries]


def import_plugin_file(path: Path, named_by: str) -> None:
    """Import the file `path` as the module named by its stem (so Ray's workers import it by that name);
    a PluginError naming it and what went wrong."""
    name, path = path.stem, Path(path)
    if path.suffix != ".py" or not name.isidentifier():
        raise PluginError(f"plugin file {path} ({named_by}): a plugin path names a Python file, e.g. ./mymethod.py")
    if not path.is_file():
        raise PluginError(f"plugin file {path} ({named_by}): no such file")
    known = sys.modules.get(name)
    if known is not None:
        if Path(getattr(known, "__file__", None) or "").resolve() == path.resolve():
            return
        where = getattr(known, "__file__", None) or "a built-in module"
        raise PluginError(
            f"plugin file {path} ({named_by}) would be module {name!r}, which is {where}: rename the file"
        )
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    _imported[name], sys.modules[name] = named_by, module
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # as import_plugin: the plugin's bug is this suite's error
        del _imported[name], sys.modules[name]
        raise PluginError(f"plugin file {path} ({named_by}) cannot be imported: {_describe(err)}") from None


def import_suite_plugins(raw: dict, file: str) -> None:
    """Import a suite's `plugins:` (before the suite is validated; paths `anchored` at read); a
    SuiteError at plugins[i]."""
    modules = raw.get("plugins")
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        return  # the schema reports what is wrong with the key itself
    problems = []
    for i, module in enumerate(modules):
        try:
            if is_path(module):
                import_plugin_file(Path(module), "this suite's plugins:")
            else:
                import_plugin(module, "this suite's plugins:")
        except PluginError as err:
            problems.append((f"plugins[{i}]", str(err)))
    if problems:
        raise SuiteError(file, problems)


def imported() -> list[str]:
    return list(_imported)


def sources() -> list[str]:
    """The file or package folder of each imported plugin's top-level module (what Ray ships)."""
    found = []
    for top in dict.fromkeys(module.split(".")[0] for module in _imported):
        module = sys.modules[top]
        if hasattr(module, "__path__"):  # a package (a namespace package has no __file__)
            found.extend(module.__path__)
        else:
            found.append(module.__file__)
    return found
