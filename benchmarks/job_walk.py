"""The walk of one job through fedbench's files, from `fedbench run` to its summary.json, and of its
results folder from the command to the job's folder (issue 32 point 4), and the suite-schema counts of
point 3, printed so that before/after numbers can be compared.

    PYTHONPATH=$PWD python benchmarks/job_walk.py [--edges]

It runs `fedbench run` in-process on a two-round synthetic job (in a temporary folder) under
sys.setprofile and records each distinct call from one benchmark function to another in another file
(a loop's calls count once; imports are no part of the walk; calls on other threads are not seen). Of those:

- a re-entry is a call into a file that is still on the call stack below the caller's file
  (A -> B -> A: the reader goes back to a file they have not left);
- a climb is a call from a package into a higher layer (tests/test_layers.py's LAYERS), made
  through a callback or an object handed down. Two kinds are counted apart, as the standard inversions
  they are: a registry read (a method of an item a higher layer registered in a `Registry` of the lower
  one, e.g. a protocol's `batch_key`: the lower layer defines the interface and the lookup, and names no
  higher module), and a pydantic hook (a model's own serializer, which `model_dump` runs for the caller).

The results walk: of those calls, each that hands the results folder on, as a raw path (`Path` or str,
the root or one under it) or typed (`Store`, `SuiteView`, `JobDir`), with the parameter's name; and the
`results*` parameters of benchmark/ by annotation (a raw `Path`, or none, against a `Store`), and each
function outside store/ that builds a `Store` (a command's entry, or a scratch store).

The counts of point 3: the keys of a job's `dataset` that are null in every job of every shipped
suite, and the engine files that import `benchmark.suite.schema`.
"""

from __future__ import annotations

import argparse
import ast
import gc
import inspect
import os
import sys
import tempfile
import warnings
from collections import Counter
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Call:
    caller: str  # file
    caller_fn: str
    callee: str  # file
    callee_fn: str
    stack: tuple[str, ...]  # the benchmark files on the stack, the caller's first
    by_pydantic: bool  # run by pydantic for the caller (a model's serializer), not called by it


@dataclass(frozen=True)
class HandedOn:
    """A call that hands the results folder on: as `form` (raw: a path; else the type) in `parameter`."""

    caller: str
    caller_fn: str
    callee: str
    callee_fn: str
    parameter: str
    form: str


TYPED = ("Store", "SuiteView", "JobDir")


def results_form(value, root: str) -> str | None:
    """How `value` carries the results folder `root`: "root" (the raw path itself), "path" (a raw path under
    it: a file or folder the Store named), the name of its type (Store, SuiteView, JobDir), or None."""
    if isinstance(value, (str, os.PathLike)):
        text = os.fspath(value)
        if not isinstance(text, str):
            return None
        return "root" if text == root else "path" if text.startswith(root + os.sep) else None
    name = type(value).__name__
    if name in TYPED and type(value).__module__.startswith("benchmark.store."):
        where = getattr(value, "root", None) or getattr(value, "path", None)
        return name if where is not None and results_form(where, root) else None
    return None


def trace_walk() -> tuple[list[Call], list[HandedOn]]:
    """Each distinct call of one `fedbench run` of a job, and each that hands the results folder on."""
    from benchmark.cli import main

    edges: dict[tuple[str, str, str, str], Call] = {}
    handed: dict[tuple, HandedOn] = {}
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

    def arguments(frame) -> list[tuple[str, object]]:
        """(parameter, value) of each argument; those of `*args` as args[i], of `**kwargs` by their name."""
        code, values = frame.f_code, frame.f_locals
        count = code.co_argcount + code.co_kwonlyargcount
        named = [(n, values.get(n)) for n in code.co_varnames[:count]]
        if code.co_flags & inspect.CO_VARARGS:
            name = code.co_varnames[count]
            named += [(f"{name}[{i}]", v) for i, v in enumerate(values.get(name, ()))]
            count += 1
        if code.co_flags & inspect.CO_VARKEYWORDS:
            named += list(values.get(code.co_varnames[count], {}).items())
        return named

    def profile(frame, event, arg):
        if event != "call" or not frame.f_code.co_filename.startswith(root):
            return
        caller = frame.f_back
        while caller is not None and not caller.f_code.co_filename.startswith(root):
            caller = caller.f_back
        if caller is None or caller.f_code.co_filename == frame.f_code.co_filename:
            return
        if frame.f_code.co_name == "<module>" or (stack := bench_files(caller)) is None:
            return
        key = (caller.f_code.co_filename, caller.f_code.co_name, frame.f_code.co_filename, frame.f_code.co_name)
        if key not in edges:
            by_pydantic = "pydantic" in frame.f_back.f_code.co_filename
            edges[key] = Call(*key, tuple(stack), by_pydantic)
        for parameter, value in arguments(frame):
            if (form := results_form(value, results)) is not None:
                handed.setdefault((*key, parameter, form), HandedOn(*key, parameter, form))

    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "walk.yaml"
        suite.write_text(SUITE)
        results = str(Path(tmp).resolve() / "results")
        os.environ["FEDBENCH_CACHE"] = str(Path(tmp) / "cache")
        sys.setprofile(profile)
        try:
            code = main(["run", str(suite), "--results-dir", results, "--no-tracking"])
        finally:
            sys.setprofile(None)
        if code != 0 or not list(Path(results).rglob("summary.json")):
            raise SystemExit(f"the traced run failed (exit {code})")
    return list(edges.values()), list(handed.values())


def rel(file: str) -> str:
    return str(Path(file).relative_to(HERE))


def registered_code() -> set:
    """The code of every method of every item in a benchmark Registry (what a registry read runs)."""
    from benchmark.registry import Registry

    code = set()
    with warnings.catch_warnings():  # (looking at every object touches torch's deprecated aliases)
        warnings.simplefilter("ignore")
        registries = [o for o in gc.get_objects() if isinstance(o, Registry)]
    for registry in registries:
        for item in registry._items.values():
            for cls in (item if isinstance(item, type) else type(item)).__mro__:
                code |= {f.__code__ for f in vars(cls).values() if hasattr(f, "__code__")}
    return code


def upward(layer: dict[str, int], call) -> bool:
    return layer[_unit(call.callee)] > layer[_unit(call.caller)]


def classify(calls: list[Call]) -> dict[str, list[str]]:
    """The upward calls by kind: "climb" (a callback or an object of the higher layer handed down),
    "registry read", "pydantic hook"; and the re-entries."""
    layer, registered = _layers(), {(c.co_filename, c.co_name) for c in registered_code()}
    kinds: dict[str, list[str]] = {"re-entry": [], "climb": [], "registry read": [], "pydantic hook": []}
    for c in calls:
        text = f"{rel(c.caller)}:{c.caller_fn} -> {rel(c.callee)}:{c.callee_fn}"
        if c.callee in c.stack[1:]:
            kinds["re-entry"].append(text)
        if upward(layer, c):
            kind = (
                "pydantic hook"
                if c.by_pydantic
                else "registry read"
                if (c.callee, c.callee_fn) in registered
                else "climb"
            )
            kinds[kind].append(text)
    return kinds


def walk_counts(show_edges: bool) -> None:
    calls, handed = trace_walk()
    kinds = classify(calls)
    print(
        f"walk: {len(calls)} calls, {len(kinds['re-entry'])} re-entries into a file still on the stack, "
        f"{len(kinds['climb'])} climbs; besides: {len(kinds['registry read'])} registry reads, "
        f"{len(kinds['pydantic hook'])} pydantic hooks"
    )
    for file, n in Counter(text.split(" -> ")[1].split(":")[0] for text in kinds["re-entry"]).most_common():
        print(f"  re-entered {n}x: {file}")
    for kind in ("climb", "registry read", "pydantic hook") + (("re-entry",) if show_edges else ()):
        for text in kinds[kind]:
            print(f"  {kind}: {text}")
    results_counts(handed, show_edges)


def results_counts(handed: list[HandedOn], show_edges: bool) -> None:
    layer = _layers()
    forms = Counter(h.form for h in handed)
    names = sorted({h.parameter for h in handed if h.form == "root"})
    climbs = [h for h in handed if upward(layer, h)]
    print(
        f"results walk: handed on in {len(handed)} calls: the raw root in {forms['root']} "
        f"(named {', '.join(names) or '-'}), a raw path under it in {forms['path']}, typed in "
        f"{sum(forms[t] for t in TYPED)} ({', '.join(f'{t} {forms[t]}' for t in TYPED)}); {len(climbs)} climbs"
    )
    for h in handed if show_edges else climbs:
        kind = "climb" if h in climbs else "handed"
        print(f"  {kind}: {rel(h.caller)}:{h.caller_fn} -> {rel(h.callee)}:{h.callee_fn} ({h.parameter}: {h.form})")
    raw, typed = results_parameters()
    files = len({place.split(":")[0] for place in raw})
    print(
        f"results parameters in benchmark/: {len(raw)} raw (results*: a path or unannotated) in {files} files, {typed} a Store"
    )
    built = store_builds()
    print(f"Store built outside benchmark/store/ in {len(built)} places: {', '.join(built)}")


def results_parameters(package: Path = PACKAGE) -> tuple[list[str], int]:
    """(`file:function(parameter)` of each parameter named results* that takes a raw path, annotated as one
    or not at all; how many parameters, whatever their name, are annotated as a Store or SuiteView)."""
    raw, typed = [], 0
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                for a in args.posonlyargs + args.args + args.kwonlyargs:
                    annotation = ast.unparse(a.annotation) if a.annotation else ""
                    if any(t in annotation for t in ("Store", "SuiteView")):
                        typed += 1
                    elif "results" in a.arg:
                        raw.append(f"{path.relative_to(package.parent)}:{node.name}({a.arg})")
    return raw, typed


def store_builds(package: Path = PACKAGE) -> list[str]:
    """`file:function` of each `Store(...)` built outside the store's own package (store/): a command's
    entry, or a scratch store; each other function is handed one."""
    places = []
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).parts[0] == "store":
            continue
        places += [f"{path.relative_to(package.parent)}:{fn}" for fn in _store_calls(ast.parse(path.read_text()), "")]
    return places


def _store_calls(node: ast.AST, function: str) -> list[str]:
    """The innermost function around each `Store(...)` call under `node`, once per call."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        function = node.name
    found = (
        [function] if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Store" else []
    )
    return found + [f for child in ast.iter_child_nodes(node) for f in _store_calls(child, function)]


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
