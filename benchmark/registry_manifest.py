"""Writes benchmark/builtin_names.py: which of fedbench's own modules registers each name of the registries
read lazily (registry.LAZY_PACKAGES), found by importing every module of those packages, as the registries
did on every first read before. `python -m benchmark.registry_manifest` after adding or moving a name;
tests/test_builtin_names.py fails until then."""

from __future__ import annotations

from pathlib import Path

from benchmark import builtin_names, registry

HEAD = '''"""Written by `python -m benchmark.registry_manifest` (do not edit): kind -> name -> the module of
fedbench that registers it, for the registries read lazily (benchmark/registry.py)."""

BUILT_IN_NAMES: dict[str, dict[str, str]] = {
'''


def discovered() -> dict[str, dict[str, str]]:
    """What importing every module of the lazy packages registers (in a process that read no registry yet)."""
    builtin_names.BUILT_IN_NAMES.clear()  # the file being rewritten must not decide what is found
    for package in registry.LAZY_PACKAGES:
        registry.discover(package)
    found: dict[str, dict[str, str]] = {}
    for kind, name, origin in registry.REGISTERED:
        if origin.startswith(tuple(p + "." for p in registry.LAZY_PACKAGES)):
            found.setdefault(kind, {})[name] = origin
    return {kind: dict(sorted(found[kind].items())) for kind in sorted(found)}


def source(names: dict[str, dict[str, str]]) -> str:
    """benchmark/builtin_names.py's text for `names`, as `ruff format` writes it."""
    kinds = "".join(
        f'    "{kind}": {{\n' + "".join(f'        "{n}": "{m}",\n' for n, m in entries.items()) + "    },\n"
        for kind, entries in names.items()
    )
    return HEAD + kinds + "}\n"


if __name__ == "__main__":
    Path(builtin_names.__file__).write_text(source(discovered()))
