"""Plugins: methods, models, datasets and executors defined outside fedbench, in a module that
registers them as fedbench's own files do (through `fedbench`, the public API, benchmark/api.py).

A plugin module is named in one of two ways:
- an installed distribution's entry point in the group `fedbench.plugins` (its value is the
  module), imported the first time any registry is read;
- a suite's `plugins: [module.path, ...]`, for code merely on PYTHONPATH, imported when the suite
  is loaded, before it is validated against the registries.
Either way fedbench's own registrations come first (registry.load_installed), so a plugin that
registers a name fedbench already has fails at its own import, naming both modules. The Ray executor ships the source of
every plugin module imported here to its workers and names them in $FEDBENCH_PLUGINS there
(ray_worker.code_runtime_env), where the first registry read imports them again.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from pathlib import Path

from benchmark.errors import SuiteError, UserError

GROUP = "fedbench.plugins"
ENV = "FEDBENCH_PLUGINS"  # comma-separated modules: how the Ray executor names them to its workers

_imported: dict[str, str] = {}  # plugin module -> what named it


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


def _describe(err: Exception) -> str:
    """The error and the line of plugin code that raised it (not fedbench's own frames)."""
    text = f"{type(err).__name__}: {err}"
    if isinstance(err, ModuleNotFoundError):
        return text + "; is it installed, or on PYTHONPATH?"
    ours = str(Path(__file__).parent)
    frames = [f for f in traceback.extract_tb(err.__traceback__) if not f.filename.startswith(ours)]
    return text + (f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else "")


def import_suite_plugins(raw: dict, file: str) -> None:
    """Import a suite's `plugins:` (before the suite is validated); a SuiteError at plugins[i]."""
    modules = raw.get("plugins")
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        return  # the schema reports what is wrong with the key itself
    problems = []
    for i, module in enumerate(modules):
        try:
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
