"""The engine's fingerprint reads the modules that compute jobs' numbers, and not those that only report them."""

from __future__ import annotations

import ast

from benchmark.run import code_parts
from benchmark.run.code_parts import NOT_ENGINE, ROOT, engine_files


def _module(path) -> str:
    return path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__")


def _imported(path) -> set[str]:
    """Every module a file imports, at any depth of its syntax tree (function-level imports included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_every_excluded_module_exists_and_lies_in_an_engine_folder():
    for rel in NOT_ENGINE:
        assert (ROOT / rel).is_file(), rel
        assert any(rel.startswith(entry + "/") for entry in code_parts.ENGINE if not entry.endswith(".py")), rel


def test_the_fingerprint_reads_the_fedac_engine_and_not_its_report_or_record():
    read = {p.relative_to(ROOT).as_posix() for p in engine_files()}
    for computes in ("engine.py", "kernel.py", "numpy_round.py", "authors_steps.py", "replay.py", "suite_parts.py"):
        assert f"benchmark/protocols/fedac/{computes}" in read
    assert read.isdisjoint(NOT_ENGINE)


def test_no_module_that_counts_imports_an_excluded_one():
    """Were an engine module to import a report or record module, that module would decide numbers too.
    The protocol package's __init__ registers the report section (it names report.py) and is exempt:
    what it hands the engine is batch_key (jobs.py) and run_batch (replay.py), both counted."""
    excluded = {_module(ROOT / rel) for rel in NOT_ENGINE}
    for path in engine_files():
        if path.name == "__init__.py":
            continue
        assert _imported(path).isdisjoint(excluded), f"{path.relative_to(ROOT)} imports a module NOT_ENGINE leaves out"


def test_editing_an_excluded_module_leaves_the_fingerprint_as_it_was(tmp_path, monkeypatch):
    """A copy of the engine's folders, fingerprinted before and after an edit of report.py, then of engine.py."""
    import shutil

    root = tmp_path / "repo"
    for entry in code_parts.ENGINE:
        src = ROOT / entry
        dst = root / entry
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, dst)
    monkeypatch.setattr(code_parts, "ROOT", root)
    monkeypatch.setenv("FEDBENCH_CACHE", str(tmp_path / "cache"))

    def fingerprint() -> str:
        code_parts.engine_fingerprint.cache_clear()
        return code_parts.engine_fingerprint()

    before = fingerprint()
    report = root / "benchmark/protocols/fedac/report.py"
    report.write_text(report.read_text() + "\nEDITED = 1\n")
    assert fingerprint() == before
    engine = root / "benchmark/protocols/fedac/engine.py"
    engine.write_text(engine.read_text() + "\nEDITED = 1\n")
    assert fingerprint() != before
