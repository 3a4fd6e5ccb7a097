"""The results folder travels as a typed `Store` (issue 32 point 4): the layers converted so far, store/ and
run/, take no raw results path; the command builds the Store and hands it down (benchmarks/job_walk.py
follows it at run time)."""

from __future__ import annotations

import ast
from pathlib import Path

import benchmark

CONVERTED = ("store", "run")


def raw_results_parameters(package: Path) -> list[str]:
    """`file:function(parameter)` for each parameter named results* not annotated as a Store."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                for a in args.posonlyargs + args.args + args.kwonlyargs:
                    annotation = ast.unparse(a.annotation) if a.annotation else ""
                    if "results" in a.arg and "Store" not in annotation:
                        found.append(f"{path.relative_to(package.parent)}:{node.name}({a.arg})")
    return found


def test_store_and_run_take_the_results_folder_as_a_store():
    root = Path(benchmark.__file__).parent
    assert [p for unit in CONVERTED for p in raw_results_parameters(root / unit)] == []


def test_the_scan_finds_a_raw_results_parameter(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        "from pathlib import Path\n\n\ndef f(results_dir: Path, store: 'Store'):\n    pass\n\n\n"
        "def g(results_root):\n    pass\n"
    )
    assert raw_results_parameters(tmp_path / "pkg") == ["pkg/m.py:f(results_dir)", "pkg/m.py:g(results_root)"]
