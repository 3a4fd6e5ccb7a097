"""The package graph is layered: a package imports only from layers below it, so there
are no cycles. Every import counts, also the ones deferred into functions."""

from __future__ import annotations

import ast
from pathlib import Path

import benchmark

ROOT = Path(benchmark.__file__).parent
# top-level modules are the foundation, except the command line on top
FOUNDATION = {
    "errors",
    "suggest",
    "registry",
    "builtin_names",
    "registry_manifest",
    "plugins",
    "rng",
    "params",
    "metrics",
    "round_values",
    "lazy",
    "racy",
    "torch_streams",
    "torch_format",
    "gc_startup",
    "__init__",
}
CLI = {"cli", "cli_data", "cli_options", "launch", "__main__"}
# papers (the suite generator, which solves F* with engine's convex objective, and the audit) and run stand
# side by side on engine: neither imports the other; report reads both; commands holds each command's body,
# which cli calls; api: the public names a plugin imports, gathered from every layer below it
LAYERS = [
    FOUNDATION,
    {"data", "models", "fl"},
    {"job"},  # a job's typed config: what suite/ builds and the engine runs
    {"suite"},
    {"engine", "store"},  # the results on disk (store/) know nothing of training, and the engine nothing of files
    {"run", "papers"},
    {"report"},
    {"plan"},  # what `plan` computes (budget, splits): it times jobs through run/ and draws through report/
    {"protocols"},  # each registers its executor (run/protocols.py) and report section: run/, report/ never name one
    {"commands"},
    CLI,
    {"api"},
]
LAYER = {unit: i for i, units in enumerate(LAYERS) for unit in units}
# What `fedbench plan` and `status` stand on binds torch through benchmark.lazy (imported on first
# use); only the layers that train, and each model's own file, import torch themselves.
IMPORTS_TORCH = {"engine", "run", "report", "plan", "protocols"}


def unit_of(module: str) -> str:
    """`benchmark.data.cifar` -> "data"; `benchmark.errors` -> "errors"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def group_of(unit: str) -> str:
    """The top-level modules of one layer form one unit (they may import each other)."""
    return "foundation" if unit in FOUNDATION else "cli" if unit in CLI else unit


def is_script_block(node: ast.AST) -> bool:
    """`if __name__ == "__main__":`: runs only as a script, where the module is not imported."""
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    )


def import_nodes(tree: ast.AST):
    """Every import statement of a module, also the deferred ones, except in its script block."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif not is_script_block(node):
            yield from import_nodes(node)


def module_graph() -> dict[str, set[str]]:
    """benchmark module -> the benchmark modules it imports."""
    modules = {
        ".".join(p.relative_to(ROOT.parent).with_suffix("").parts).removesuffix(".__init__"): p
        for p in ROOT.rglob("*.py")
    }
    graph = {}
    for name, path in modules.items():
        targets = set()
        for node in import_nodes(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def imports() -> list[tuple[str, str, str]]:
    """(importing unit, imported unit, file) for every import of a benchmark module."""
    found = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        here = unit_of(".".join(rel.parts))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("benchmark"):
                targets = [node.module] if node.module != "benchmark" else [f"benchmark.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("benchmark")]
            else:
                continue
            found += [
                (here, unit_of(t), str(path.relative_to(ROOT.parent)))
                for t in targets
                if group_of(unit_of(t)) != group_of(here)
            ]
    return found


def test_every_package_and_module_has_a_layer():
    units = {
        p.stem if p.is_file() else p.name for p in ROOT.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    assert units <= set(LAYER), f"give these a layer here (and in the README's code map): {sorted(units - set(LAYER))}"


def test_packages_import_only_from_layers_below():
    upward = sorted({f"{file}: {src} -> {dst}" for src, dst, file in imports() if LAYER[dst] >= LAYER[src]})
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


# report/ renders what is on disk; these four still reach run/ (check reruns jobs; status, frames and the
# protocol sections judge staleness by run/stale.py, which needs the code fingerprints of run/code_parts.py)
REPORT_READS_RUN = {"check.py", "frames.py", "protocol_sections.py", "status.py"}


def test_only_the_named_report_modules_import_run():
    reaching = {Path(file).name for src, dst, file in imports() if (src, dst) == ("report", "run")}
    assert reaching <= REPORT_READS_RUN, f"report/ modules that import run/: {sorted(reaching - REPORT_READS_RUN)}"


def test_the_check_sees_deferred_imports():
    edges = {(src, dst) for src, dst, _ in imports()}
    assert ("cli", "commands") in edges and ("engine", "data") in edges  # cli imports each body inside its command
    assert ("commands", "run") in edges
    assert ("report", "papers") in edges  # the report scores only the cells the audit finds on the paper


def test_no_module_imports_itself_through_others():
    """No import cycle between modules either (a registry is filled by discovery, not by an
    import at the bottom of the module that holds it)."""
    graph = module_graph()

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo += graph[node]
        return False

    cycles = sorted(f"{a} <-> {b}" for a in graph for b in graph[a] if a < b and reaches(b, a))
    assert not cycles, "modules in an import cycle:\n" + "\n".join(cycles)


def test_validation_layers_bind_torch_lazily():
    """The subprocess test (tests/cli/test_import_cost.py) sees the suites of today; this sees
    every module, also the code paths those suites do not take."""
    offenders = []
    for path in ROOT.rglob("*.py"):
        module = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        if unit_of(module) in IMPORTS_TORCH or (unit_of(module) == "models" and module != "benchmark.models.registry"):
            continue
        for node in import_nodes(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            offenders += [f"{module}:{node.lineno}" for name in names if name.split(".")[0] == "torch"]
    assert not offenders, "use `from benchmark.lazy import torch` (or nn, F) instead of importing torch:\n" + "\n".join(
        offenders
    )


def test_the_engine_takes_a_job_not_a_suite():
    """The engine trains a job's typed config (benchmark/job/): it never reads the suite's file format."""
    engine_to_suite = sorted({file for src, dst, file in imports() if src == "engine" and dst == "suite"})
    assert not engine_to_suite, "the engine imports the job config (benchmark.job), not suite/:\n" + "\n".join(
        engine_to_suite
    )
