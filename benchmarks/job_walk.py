"""The walk of one job through fedbench's files, from `fedbench run` to its summary.json (issue 32 point 4),
and the suite-schema counts of point 3, printed so that before/after numbers can be compared.

    PYTHONPATH=$PWD python benchmarks/job_walk.py [--edges]

It runs `fedbench run` in-process on a two-round synthetic job (in a temporary folder) under
sys.setprofile and records each distinct call from one benchmark function to another in another file
(a loop's calls count once; imports are no part of the walk). Of those:

- a re-entry is a call into a file that is still on the call stack below the caller's file
  (A -> B -> A: the reader goes back to a file they have not left);
- a climb is a call from a package into a higher layer (tests/test_layers.py's LAYERS), made
  through a callback or an object handed down.

The counts of point 3: the keys of a job's `dataset` that are null in every job of every shipped
suite, and the engine files that import `benchmark.suite.schema`.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
PACKAGE = HERE / "benchmark"
SUITE = """\
name: walk
defaults:
  rounds: 2
  num_clients: 4
  participation: {rate: 0.5}
  local: {epochs: 1, batch_size: 10}
  model: {name: logistic}
datasets:
  - name: synthetic
    params: {num_users: 4, dim: 5, num_classes: 3, max_samples: 40}
    split: {kind: natural}
methods: [fedavg]
"""


def _layers() -> dict[str, int]:
    sys.path.insert(0, str(HERE / "tests"))
    from test_layers import LAYER

    return LAYER


def _unit(file: str) -> str:
    """`.../benchmark/engine/setup.py` -> "engine"; `.../benchmark/cli.py` -> "cli" (test_layers' units)."""
    return Path(file).relative_to(PACKAGE).with_suffix("").parts[0]


def trace_walk() -> list[tuple[str, str, str, str, tuple[str, ...]]]:
    """(caller file, caller function, callee file, callee function, the files on the stack) per distinct call."""
    from benchmark.cli import main

    edges: dict[tuple[str, str, str, str], tuple[str, ...]] = {}
    root = str(PACKAGE) + os.sep

    def bench_files(frame) -> list[str] | None:
        """The benchmark files on the stack, innermost first; None while a module is imported (no walk)."""
        files = []
        while frame is not None:
            file = frame.f_code.co_filename
            if file.startswith(root) and frame.f_code.co_name == "<module>":
                return None
            if file.startswith(root) and (not files or files[-1] != file):
                files.append(file)
            frame = frame.f_back
        return files

    def profile(frame, event, arg):
        if event != "call" or not frame.f_code.co_filename.startswith(root):
            return
        caller = frame.f_back
        while caller is not None and not caller.f_code.co_filename.startswith(root):
            caller = caller.f_back
        if caller is None or caller.f_code.co_filename == frame.f_code.co_filename:
            return
        key = (caller.f_code.co_filename, caller.f_code.co_name, frame.f_code.co_filename, frame.f_code.co_name)
        if key not in edges and frame.f_code.co_name != "<module>" and (stack := bench_files(caller)) is not None:
            edges[key] = tuple(stack)

    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "walk.yaml"
        suite.write_text(SUITE)
        os.environ["FEDBENCH_CACHE"] = str(Path(tmp) / "cache")
        sys.setprofile(profile)
        try:
            code = main(["run", str(suite), "--results-dir", str(Path(tmp) / "results"), "--no-tracking"])
        finally:
            sys.setprofile(None)
        if code != 0 or not list((Path(tmp) / "results").rglob("summary.json")):
            raise SystemExit(f"the traced run failed (exit {code})")
    return [(*key, stack) for key, stack in edges.items()]


def rel(file: str) -> str:
    return str(Path(file).relative_to(HERE))


def walk_counts(show_edges: bool) -> None:
    layer = _layers()
    reentries: Counter = Counter()
    climbs = []
    walk = trace_walk()
    for caller, c_fn, callee, e_fn, stack in walk:
        if callee in stack[1:]:
            reentries[rel(callee)] += 1
            if show_edges:
                print(f"  re-entry {rel(caller)}:{c_fn} -> {rel(callee)}:{e_fn}")
        if layer[_unit(callee)] > layer[_unit(caller)]:
            climbs.append(f"{rel(caller)}:{c_fn} -> {rel(callee)}:{e_fn}")
    print(
        f"walk: {len(walk)} calls, {sum(reentries.values())} re-entries into a file still on the stack, "
        f"{len(climbs)} climbs"
    )
    for file, n in reentries.most_common():
        print(f"  re-entered {n}x: {file}")
    for climb in climbs:
        print(f"  climb: {climb}")


def schema_counts() -> None:
    from benchmark.suite.expand import load_jobs

    always_null: set[str] | None = None
    keys: set[str] = set()
    for path in sorted((HERE / "suites").rglob("*.yaml")):
        try:
            _, jobs = load_jobs(path)
        except Exception as err:  # a suite that needs plugins or data not here: skipped, and said
            print(f"  skipped {rel(str(path))}: {type(err).__name__}")
            continue
        for job in jobs:
            dataset = job.config.dataset.model_dump()
            keys |= set(dataset)
            nulls = {k for k, v in dataset.items() if v is None}
            always_null = nulls if always_null is None else always_null & nulls
    nulls = sorted(always_null or ())
    print(f"job dataset keys: {len(keys)}, null in every job of every shipped suite: {len(nulls)} {nulls}")
    importers = [
        rel(str(p))
        for p in sorted((PACKAGE / "engine").rglob("*.py"))
        if any(
            isinstance(n, ast.ImportFrom) and n.module == "benchmark.suite.schema"
            for n in ast.walk(ast.parse(p.read_text()))
        )
    ]
    print(f"engine files importing benchmark.suite.schema: {len(importers)} {importers}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edges", action="store_true", help="also print each re-entering call")
    args = parser.parse_args()
    schema_counts()
    walk_counts(args.edges)
