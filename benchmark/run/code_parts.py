"""The code that decides a job's numbers, part by part: one fingerprint per part of its method
(server rule, each client term, uplink and downlink codec), its model, its dataset and fedbench's
engine, built-in or plugin alike. Every summary.json records them (`code_parts`) with the versions
of the distributions they come from (`code_versions`); a done job whose parts changed since is
stale (docs/runs.md, "Stale jobs"). The fingerprint is not part of the job id.

The rule (read statically: nothing is imported to fingerprint it, so `status` needs no torch):
- A part's code is its class (the model: its factory; the dataset: its loader) and, transitively,
  every top-level function, class and assignment of fedbench's or the part's own package that it
  names: directly, through `from M import N`, or as `module.name` of a module imported so.
  Base classes are named in the class statement, so they count.
- The engine (ENGINE below) counts module by module, whole.
- Each piece is normalised as `ast.dump` of its syntax tree without line numbers and without
  docstrings: formatting, comments and docstrings change nothing; any other edit (a renamed local
  variable or a changed annotation included) counts.
- Not followed: names looked up at run time (`getattr`, a registry read by name, a method of an
  object the part is handed), third-party code (recorded by distribution version only), files
  that are not Python.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import importlib.util
import json
import sys
import time
from importlib.metadata import PackageNotFoundError, packages_distributions, version
from pathlib import Path

from benchmark.racy import racy
from benchmark.run.code_fingerprint import code_fingerprint

ROOT = Path(__file__).resolve().parents[2]
# fedbench's code besides the parts that decides numbers: training, aggregation of rounds, the
# protocols' engines, the summaries' metrics, the random streams, the client splits
ENGINE = (
    "benchmark/engine",
    "benchmark/protocols",
    "benchmark/metrics.py",
    "benchmark/rng.py",
    "benchmark/data/partition.py",
    "benchmark/data/participation.py",
)
# modules in ENGINE's folders that compute no job's numbers: a protocol's report, its comparison with
# other people's runs, the replay record's writer and the budget's cost model. Editing them leaves every
# done job current (tests/run/test_engine_modules.py: no module that counts imports one of these)
NOT_ENGINE = tuple(
    f"benchmark/protocols/fedac/{name}.py"
    for name in ("authors_rerun", "compare", "cost", "power", "recompute", "released", "released_run", "report")
)
OWN_PACKAGES = ("benchmark", "fedbench")
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _without_docstrings(node: ast.AST) -> ast.AST:
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if isinstance(inner, (*DEFINITIONS, ast.Module)) and body and _is_docstring(body[0]):
            inner.body = body[1:] or [ast.Pass()]
    return node


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def normalised(source: str) -> str:
    """`source` as its syntax tree: what formatting, comments and docstrings do not change."""
    return ast.dump(_without_docstrings(ast.parse(source)), annotate_fields=False, include_attributes=False)


class ModuleCode:
    """A module's top-level definitions and imports, read from its file without importing it."""

    def __init__(self, name: str, path: Path):
        self.name, self.path = name, path
        source = path.read_bytes()
        self.sha256 = hashlib.sha256(source).hexdigest()  # of the bytes parsed: what a memo of them checks
        tree = _without_docstrings(ast.parse(source, str(path)))
        self.package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        self.defined: dict[str, list[ast.stmt]] = {}
        self.imported: dict[str, tuple[str, str | None]] = {}  # local name -> (module, name in it | None: the module)
        self.star: list[str] = []  # modules imported with `from M import *`
        for stmt in tree.body:
            for bound in self._binds(stmt):
                self.defined.setdefault(bound, []).append(stmt)

    def _binds(self, stmt: ast.stmt) -> list[str]:
        if isinstance(stmt, DEFINITIONS):
            return [stmt.name]
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                local = alias.asname or alias.name.split(".")[0]
                self.imported[local] = (alias.name if alias.asname else local, None)
        elif isinstance(stmt, ast.ImportFrom):
            base = importlib.util.resolve_name("." * stmt.level + (stmt.module or ""), self.package or None)
            for alias in stmt.names:
                if alias.name == "*":
                    self.star.append(base)
                else:
                    self.imported[alias.asname or alias.name] = (base, alias.name)
        elif isinstance(stmt, (ast.If, ast.Try)):  # `if TYPE_CHECKING:`, `try: import x`
            return [
                b for inner in ast.iter_child_nodes(stmt) if isinstance(inner, ast.stmt) for b in self._binds(inner)
            ]
        return []


@functools.cache
def _module_path(name: str) -> Path | None:
    """The file of module `name` when it is a Python file, else None. Found without importing
    anything (a submodule beside its package's __init__.py), so no heavy library is loaded."""
    loaded = sys.modules.get(name)
    if loaded is not None and isinstance(getattr(loaded, "__file__", None), str):
        return Path(loaded.__file__) if loaded.__file__.endswith(".py") else None
    parent, _, last = name.rpartition(".")
    if parent:
        package = _module_path(parent)
        if package is None or package.name != "__init__.py":
            return None
        found = [f for f in (package.parent / f"{last}.py", package.parent / last / "__init__.py") if f.is_file()]
        return found[0] if found else None
    try:
        spec = importlib.util.find_spec(name)  # a top-level module: imports nothing
    except (ImportError, ValueError):
        return None
    origin = spec and spec.origin
    return Path(origin) if origin and origin.endswith(".py") else None


@functools.cache
def _module(name: str) -> ModuleCode | None:
    """The code of module `name` when it is a Python file, else None."""
    path = _module_path(name)
    return ModuleCode(name, path) if path else None


def _is_module(name: str) -> bool:
    return _module(name) is not None


def _walk_skipping(node: ast.AST, skipped: set[int]):
    if id(node) in skipped:
        return
    yield node
    for child in ast.iter_child_nodes(node):
        yield from _walk_skipping(child, skipped)


class Closure:
    """The pieces of code a definition names, transitively, within the packages `own`."""

    def __init__(self, own: frozenset[str]):
        self.own, self.pieces, self._seen = own, {}, set()
        self.files: dict[str, str] = {}  # path -> sha256 of each module read: what the fingerprint depends on

    def add(self, module: str, name: str) -> None:
        if (module, name) in self._seen or module.split(".")[0] not in self.own:
            return
        self._seen.add((module, name))
        code = _module(module)
        if code is None:
            return
        self.files[str(code.path)] = code.sha256
        if name in code.defined:
            for i, stmt in enumerate(code.defined[name]):
                self.pieces[f"{module}:{name}:{i}"] = ast.dump(stmt, annotate_fields=False)
                self._follow(code, stmt)
        elif name in code.imported:  # re-exported (a package's __init__, fedbench's public API)
            self._resolve(*code.imported[name])
        elif _is_module(f"{module}.{name}"):
            self.whole(f"{module}.{name}")
        else:
            for star in code.star:
                self.add(star, name)

    def _resolve(self, module: str, name: str | None) -> None:
        if module.split(".")[0] not in self.own:
            return
        if name is None or (name not in getattr(_module(module), "defined", {}) and _is_module(f"{module}.{name}")):
            return  # a module named as a value: followed where an attribute of it is read
        self.add(module, name)

    def whole(self, module: str) -> None:
        code = _module(module)
        if code:
            self.files[str(code.path)] = code.sha256
        for name in code.defined if code else ():
            self.add(module, name)

    def _follow(self, code: ModuleCode, stmt: ast.stmt) -> None:
        """What `stmt` names; not its decorators (registering one changes no number)."""
        decorators = {id(d) for n in ast.walk(stmt) for d in getattr(n, "decorator_list", [])}
        for node in _walk_skipping(stmt, decorators):
            if isinstance(node, ast.Name):
                self._name(code, node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                target = code.imported.get(node.value.id)
                if target:  # `module.attr` of an imported module
                    module = target[0] if target[1] is None else f"{target[0]}.{target[1]}"
                    if module.split(".")[0] in self.own and _module(module) is not None:
                        self.add(module, node.attr)

    def _name(self, code: ModuleCode, name: str) -> None:
        if name in code.defined:
            self.add(code.name, name)
        elif name in code.imported:
            self._resolve(*code.imported[name])

    def digest(self) -> str:
        text = "\0".join(self.pieces[k] for k in sorted(self.pieces, key=lambda k: k.rsplit(":", 1)[0]))
        return hashlib.sha256(text.encode()).hexdigest()[:12]


@functools.cache
def definition_fingerprint(module: str, qualname: str) -> str:
    """The fingerprint of the top-level definition `qualname` of `module` and what it names (cached:
    once per process, whatever the number of jobs; and on disk with the files it read, see _remembered:
    parsing them cost every run 0.05-0.3 CPU-s before its first job)."""
    own = sorted({*OWN_PACKAGES, module.split(".")[0]})
    # the same names found elsewhere on the path (another checkout, another plugin folder) are other code
    where = [str(_module_path(name)) for name in (*own, module)]
    key = hashlib.sha256("\0".join([sys.version, *where, module, qualname]).encode()).hexdigest()[:32]
    memo = _memo_folder() / f"definition-{key}.json"
    if (known := _remembered(memo)) is not None:
        return known
    closure = Closure(frozenset(own))
    top = qualname.split(".")[0]
    if top.isidentifier():
        closure.add(module, top)
    else:  # a lambda at the module's top level (a dataset's `load=lambda ...`): the whole module
        closure.whole(module)
    found = closure.digest()
    _remember(memo, found, closure.files)
    return found


def _memo_folder() -> Path:
    from benchmark.data.cache import cache_dir

    return cache_dir() / "code_fingerprints"


def _remembered(memo: Path) -> str | None:
    """The fingerprint a memo holds while every file it was computed from is unchanged: the same (size,
    mtime) as when remembered, or else the same bytes (a checkout that rewrote a file as it was; the memo
    then takes the new stat). None: no memo, a damaged one, or a file changed or gone."""
    try:
        known = json.loads(memo.read_text())
        digest, files = known["digest"], known["files"]
        restat = False
        for name, (size, mtime_ns, sha) in files.items():
            path = Path(name)
            stat = path.stat()
            if [stat.st_size, stat.st_mtime_ns] != [size, mtime_ns]:
                if hashlib.sha256(path.read_bytes()).hexdigest() != sha:
                    return None
                restat = True
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if restat:
        _remember(memo, digest, {name: sha for name, (_, _, sha) in files.items()})
    return digest


def _remember(memo: Path, digest: str, files: dict[str, str]) -> None:
    """Write the memo: each file's (size, mtime, sha256); a racy mtime (benchmark/racy.py) is stored as -1, so
    the next run compares that file's bytes."""
    from benchmark.store.job_dir import atomic_write_bytes

    now = time.time_ns()
    stats = {}
    with contextlib.suppress(OSError):  # an unwritable cache only costs the next process the parse
        for name, sha in files.items():
            stat = Path(name).stat()
            stats[name] = [stat.st_size, -1 if racy(stat.st_mtime_ns, now) else stat.st_mtime_ns, sha]
        memo.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(memo, json.dumps({"digest": digest, "files": stats}).encode(), durable=False)


def object_fingerprint(obj) -> str:
    return definition_fingerprint(obj.__module__, obj.__qualname__)


def engine_files() -> list[Path]:
    """The modules the engine's fingerprint reads: ENGINE's files and folders, less NOT_ENGINE."""
    found = (f for entry in ENGINE for f in ([ROOT / entry] if entry.endswith(".py") else (ROOT / entry).rglob("*.py")))
    return sorted(f for f in found if f.relative_to(ROOT).as_posix() not in NOT_ENGINE)


@functools.cache
def engine_fingerprint() -> str:
    """The engine's modules, normalised; remembered in the fedbench cache under a hash of their bytes and
    of this Python (whose `ast.dump` it is): parsing 40 modules cost every run 0.1-0.5 s before its first job."""
    from benchmark.store.job_dir import atomic_write_bytes

    files = engine_files()
    sources = [(path.relative_to(ROOT).as_posix().encode(), path.read_bytes()) for path in files]
    raw = hashlib.sha256(sys.version.encode())
    for name, source in sources:
        raw.update(name + b"\0" + source + b"\0")
    memo = _memo_folder() / f"engine-{raw.hexdigest()[:32]}"
    with contextlib.suppress(OSError, UnicodeDecodeError):
        if len(known := memo.read_text()) == 12 and all(c in "0123456789abcdef" for c in known):
            return known
    digest = hashlib.sha256()
    for name, source in sources:
        digest.update(name + b"\0" + normalised(source.decode()).encode() + b"\0")
    found = digest.hexdigest()[:12]
    with contextlib.suppress(OSError):  # an unwritable cache only costs the next process the parse
        memo.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(memo, found.encode(), durable=False)
    return found


def _part_names(config) -> tuple:
    """What decides which code a JobConfig runs: its parts' registered names."""
    m = config.method
    return (
        m.server.name,
        tuple(t.name for t in m.client),
        m.uplink.name,
        m.downlink.name,
        config.model.name,
        config.dataset.name,
    )


@functools.cache
def _part_objects(server: str, terms: tuple, uplink: str, downlink: str, model: str, dataset: str) -> tuple:
    """(part label, module, top-level name) of the code behind each part."""
    from benchmark.data.source import DATASETS
    from benchmark.fl.registry import CLIENT_TERMS, CODECS, SERVER_RULES
    from benchmark.models.registry import MODELS, load_installed

    load_installed()
    parts = [(f"server {server}", SERVER_RULES.get(server))]
    parts += [(f"client {term}", CLIENT_TERMS.get(term)) for term in terms]
    parts += [(f"uplink {uplink}", CODECS.get(uplink)), (f"downlink {downlink}", CODECS.get(downlink))]
    parts += [(f"dataset {dataset}", DATASETS.get(dataset).load)]
    where = [(label, obj.__module__, obj.__qualname__) for label, obj in parts]
    return (*where, (f"model {model}", *MODELS[model].factory.split(":")))


@functools.cache
def _code_of(*names) -> tuple:
    parts = [(label, definition_fingerprint(module, name)) for label, module, name in _part_objects(*names)]
    return (*parts, ("engine", engine_fingerprint()))


def job_code(config) -> dict[str, str]:
    """Part label -> fingerprint, for a JobConfig: what summary.json records as `code_parts`
    (cached per combination of parts: a few microseconds a job)."""
    return dict(_code_of(*_part_names(config)))


def code_stamp(code: dict) -> str:
    """A short hash of a `job_code` dict (or a summary's `code_parts`): equal stamps, no changed part."""
    return hashlib.sha256(json.dumps(code, sort_keys=True).encode()).hexdigest()[:16]


@functools.cache
def _stamp_of(*names) -> str:
    return code_stamp(dict(_code_of(*names)))


def job_code_stamp(config) -> str:
    """`code_stamp(job_code(config))`, cached per combination of parts (store/done_index.py asks it of every job)."""
    return _stamp_of(*_part_names(config))


_packages_distributions = functools.cache(packages_distributions)


@functools.cache
def _distribution_of(top: str) -> tuple[str, str] | None:
    for dist in _packages_distributions().get(top, []):
        try:
            return dist, version(dist)
        except PackageNotFoundError:
            continue
    return None


def code_versions(config) -> dict[str, str]:
    """The distributions the job's parts come from -> their versions: fedbench's always; a plugin
    module no installed distribution holds (a file on PYTHONPATH) is listed by its top-level
    module's name as "not installed"."""
    versions = {"fedbench": code_fingerprint().split("+")[0]}
    for _, module, _ in _part_objects(*_part_names(config)):
        top = module.split(".")[0]
        if top not in OWN_PACKAGES:
            found = _distribution_of(top)
            versions[found[0] if found else top] = found[1] if found else "not installed"
    return versions


def changed_parts(recorded: dict | None, current: dict[str, str]) -> list[str] | None:
    """The parts whose code differs from what produced a summary; None when the summary records
    none (written before per-part fingerprints: its code is unknown)."""
    if not isinstance(recorded, dict):
        return None
    return sorted(label for label in {*recorded, *current} if recorded.get(label) != current.get(label))
