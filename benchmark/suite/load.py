"""Read and validate a suite file; every problem is reported with its YAML path."""

from __future__ import annotations

import difflib
import errno
import stat
from pathlib import Path

from pydantic import ValidationError

from benchmark.errors import SuiteError, UserError
from benchmark.params import NOT_A_BOOLEAN, NOT_A_STRING, pydantic_problems
from benchmark.plugins import anchored, import_suite_plugins
from benchmark.registry import load_installed
from benchmark.suite.extends import merge_suites
from benchmark.suite.located import written_at
from benchmark.suite.safe_yaml import YamlRefused, decode, parse_yaml, scalar_lines
from benchmark.suite.schema import Suite


def _not_a_file(path: Path) -> str:
    """Why `path` is no regular file, in the words of what it is (a FIFO or a device would be read
    forever or block: they are refused before any read)."""
    try:
        mode = path.stat().st_mode
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "is a symbolic link that loops back on itself, not a suite file"
        if err.errno == errno.ENOENT:
            return "is a symbolic link to a missing file" if path.is_symlink() else "no such suite file"
        return f"cannot be read ({err.strerror or err})"
    if stat.S_ISDIR(mode):
        return "is a folder, not a suite file"
    kinds = {stat.S_ISFIFO: "a named pipe (FIFO)", stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device"}
    kind = next((name for test, name in kinds.items() if test(mode)), "a socket")
    return f"is {kind}, not a suite file; give the path of a YAML file"


def missing_suite(path: Path) -> UserError:
    """A path that is no file: say why plainly, and list the suites in the folder it names (or its own)."""
    folder = path if path.is_dir() else path.parent
    reason = _not_a_file(path)
    message = f"{path}: {reason}"
    names = sorted(p.name for p in folder.glob("*.y*ml") if p.name != path.name) if folder.is_dir() else []
    if names:
        close = difflib.get_close_matches(path.name, names, n=1, cutoff=0.8) if reason == "no such suite file" else []
        message += f"; suites in {folder}/: {', '.join(names)}" + (
            f"; did you mean {str(folder / close[0])!r}?" if close else ""
        )
    return UserError(message)


def read_yaml(path: Path) -> object:
    if not path.is_file():
        raise missing_suite(path)
    try:
        return parse_yaml(decode(path.read_bytes()))
    except YamlRefused as err:
        raise SuiteError(str(path), [("", str(err))]) from None
    except OSError as err:
        raise UserError(f"{path}: cannot be read ({err.strerror or err})") from None


def read_suite(path: Path, seen: tuple[Path, ...] = (), origins: dict | None = None) -> dict:
    """The suite's mapping; one that `extends:` another is merged over it (suite/extends.py), and its
    `extends` becomes the parent's path as given from here. `origins`, when given, is filled with
    where each method and dataset entry was written (merge_suites)."""
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise SuiteError(str(path), [("", "a suite is a YAML mapping with name, datasets and methods")])
    if "plugins" in raw:
        raw["plugins"] = anchored(raw["plugins"], path.parent)
    parent = raw.get("extends")
    if parent is None:
        if origins is not None:
            for key in ("methods", "datasets"):
                if isinstance(raw.get(key), list):
                    origins[key] = [[(str(path), i)] for i in range(len(raw[key]))]
        return raw
    if not isinstance(parent, str):
        raise SuiteError(str(path), [("extends", "expected the path of a suite file, relative to this one")])
    parent_path = path.parent / parent
    if parent_path.resolve() in seen:
        raise SuiteError(str(path), [("extends", f"{parent}: suites that extend each other in a circle")])
    if not parent_path.is_file():
        raise SuiteError(str(path), [("extends", str(missing_suite(parent_path)))])
    merged = merge_suites(read_suite(parent_path, (*seen, path.resolve()), origins), raw, str(path), origins)
    return {**merged, "extends": str(parent_path)}


def load_suite(path: str | Path) -> Suite:
    path = Path(path)
    raw = read_suite(path)
    load_installed()  # fedbench's own names and the installed plugins' first, so a clash names the suite's plugin
    import_suite_plugins(raw, str(path))  # then the suite is validated against what they register
    try:
        return Suite.model_validate(raw)
    except ValidationError as err:
        raise located(SuiteError(str(path), pydantic_problems(err, model=Suite)), path) from None


def located(err: SuiteError, path: Path) -> SuiteError:
    """An extending suite's problems at methods[i] / datasets[i] of the merged suite, placed at the
    file, index and line where the user wrote that entry (the merged index counts the parent's)."""
    origins: dict = {}
    try:
        raw = read_suite(Path(path), origins=origins)
    except UserError:
        return err
    if raw.get("extends") is None:
        return err
    return SuiteError(err.file, [(written_at(where, origins), message) for where, message in err.problems])


def about_booleans(message: str) -> bool:
    return NOT_A_BOOLEAN in message or NOT_A_STRING in message


def with_lines(err: SuiteError) -> SuiteError:
    """A boolean where a string is meant, or a YAML 1.1 word (`yes`, `off`) where a boolean is, is
    also given the line it is written on, where the suite file writes that path itself (a suite that
    `extends` another has its lists merged: its own indices are not the error's)."""
    problems = err.problems
    path = Path(err.file)
    if not path.is_file() or not any(about_booleans(message) for _, message in problems):
        return err
    lines = scalar_lines(decode(path.read_bytes())) if "extends" not in read_yaml(path) else {}
    return SuiteError(
        err.file,
        [
            (where, f"line {lines[where]}: {message}")
            if about_booleans(message) and where in lines
            else (where, message)
            for where, message in problems
        ],
    )
