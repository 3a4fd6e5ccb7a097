"""Read and validate a suite file; every problem is reported with its YAML path."""

from __future__ import annotations

import difflib
from pathlib import Path

from pydantic import ValidationError

from benchmark.errors import SuiteError, UserError
from benchmark.params import NOT_A_BOOLEAN, NOT_A_STRING, pydantic_problems
from benchmark.plugins import import_suite_plugins
from benchmark.registry import load_installed
from benchmark.suite.extends import merge_suites
from benchmark.suite.safe_yaml import YamlRefused, decode, parse_yaml, scalar_lines
from benchmark.suite.schema import Suite


def missing_suite(path: Path) -> UserError:
    """A path that is no file: say so plainly, and list the suites in the folder it names (or its own)."""
    folder = path if path.is_dir() else path.parent
    message = f"{path}: " + ("is a folder, not a suite file" if path.is_dir() else "no such suite file")
    names = sorted(p.name for p in folder.glob("*.y*ml")) if folder.is_dir() else []
    if names:
        close = [] if path.is_dir() else difflib.get_close_matches(path.name, names, n=1, cutoff=0.8)
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


def read_suite(path: Path, seen: tuple[Path, ...] = ()) -> dict:
    """The suite's mapping; one that `extends:` another is merged over it (suite/extends.py), and its
    `extends` becomes the parent's path as given from here."""
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise SuiteError(str(path), [("", "a suite is a YAML mapping with name, datasets and methods")])
    parent = raw.get("extends")
    if parent is None:
        return raw
    if not isinstance(parent, str):
        raise SuiteError(str(path), [("extends", "expected the path of a suite file, relative to this one")])
    parent_path = path.parent / parent
    if parent_path.resolve() in seen:
        raise SuiteError(str(path), [("extends", f"{parent}: suites that extend each other in a circle")])
    if not parent_path.is_file():
        raise SuiteError(str(path), [("extends", str(missing_suite(parent_path)))])
    merged = merge_suites(read_suite(parent_path, (*seen, path.resolve())), raw, str(path))
    return {**merged, "extends": str(parent_path)}


def load_suite(path: str | Path) -> Suite:
    path = Path(path)
    raw = read_suite(path)
    load_installed()  # fedbench's own names and the installed plugins' first, so a clash names the suite's plugin
    import_suite_plugins(raw, str(path))  # then the suite is validated against what they register
    try:
        return Suite.model_validate(raw)
    except ValidationError as err:
        raise SuiteError(str(path), pydantic_problems(err, model=Suite)) from None


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
